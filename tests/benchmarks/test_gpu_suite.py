"""``bash benchmarks/gpu_suite.sh --dry-run``: every step of the one-call GPU suite, in its smoke
mode on CPU, under its timeout, merged into one file with a table (about a minute on 2 cores).
A dry run allows a dirty tree (a developer's checkout) and records the flag either way."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEPS = ["env", "tests", "attention", "attention_mask", "train", "promoter_scan", "attention_variants"]


@pytest.mark.slow
def test_dry_run_runs_every_step_and_merges_their_results(tmp_path):
    pytest.importorskip("triton")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    env.pop("TRITON_INTERPRET", None)  # the smoke modes set it themselves
    env.pop("SUITE_GIT_STATE", None)
    results_before = set((REPO / "benchmarks" / "results").rglob("*"))
    result = subprocess.run(["bash", "benchmarks/gpu_suite.sh", "--dry-run"], check=False, cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    merged = json.loads((tmp_path / "gpu_suite.json").read_text())
    assert [s["step"] for s in merged["steps"]] == STEPS
    assert all(s["exit_status"] == 0 for s in merged["steps"]), merged["steps"]
    assert merged["dry_run"] and merged["commit"] and merged["versions"]["torch"]
    assert set((REPO / "benchmarks" / "results").rglob("*")) == results_before  # a dry run is not a result
    # the tree was recorded once, before the steps, and every result file carries that record
    tree = json.loads((tmp_path / "git.json").read_text())
    assert isinstance(tree["dirty"], bool) and tree["dirty"] == bool(tree["git_status"])
    for name in ("attention", "attention_mask", "train", "promoter_scan", "attention_variants"):
        assert (merged[name]["commit"], merged[name]["dirty"]) == (tree["commit"], tree["dirty"]), name
    assert (merged["commit"], merged["dirty"], merged["git_status"]) == (tree["commit"], tree["dirty"],
                                                                        tree["git_status"])

    attention = merged["attention"]
    ours = f"triton:{attention['default_variant']}"
    methods = {row["method"] for row in attention["results"]}
    assert {ours, "sdpa:math", "flex", "flex:max-autotune"} <= methods  # flex rows: skipped off CUDA
    for row in attention["results"]:
        if row["method"].startswith("triton"):  # gated on the whole plan that is timed, then timed
            assert row["gate"]["passed"] and set(row["gate"]["rel_err"]) == {"out", "dq", "dk", "dv"}
            assert row["fwd_bwd_ms"] > 0 and row["timing"]["fwd"]["iterations"] == 1  # one call off CUDA
    assert all(row["key_padding_mask"] for row in merged["attention_mask"]["results"])
    train = {(r["method"], r["role"], r["seq"]): r for r in merged["train"]["results"]}
    assert train[("ours", "scaling", 128)]["tokens_per_step"] == train[("ours", "scaling", 256)]["tokens_per_step"]
    assert train[("ours", "memory", 256)]["checkpoint_layers"] and ("hf", "vs_hf", 128) in train
    assert all(r["model_flops_per_step"] > 0 and r["mfu"] is None for r in train.values())  # no peak off CUDA
    assert merged["promoter_scan"]["windows_scored"] > 0
    assert ("ours+compile", "scaling", 128) in train  # compiled layers, timed beside the eager row
    variants = {row["method"]: row for row in merged["attention_variants"]["results"]}
    assert {"triton:preload-fused", "triton:preload-fused-atomic-dq"} <= set(variants)
    assert all(row["gate"]["passed"] for row in variants.values())  # the atomic dQ passes the fp32 gate
    assert {line["status"] for line in merged["target_table"]} == {"not measured"}  # smoke values
    assert "| attention | ok |" in result.stdout and "| not measured |" in result.stdout
