"""``bash benchmarks/gpu_suite.sh --dry-run``: every step of the one-call GPU suite, in its smoke
mode on CPU, under its timeout, merged into one file with a table (about a minute on 2 cores)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEPS = ["env", "tests", "attention", "attention_mask", "train", "promoter_scan"]


@pytest.mark.slow
def test_dry_run_runs_every_step_and_merges_their_results(tmp_path):
    pytest.importorskip("triton")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable, "OMP_NUM_THREADS": "1"}
    env.pop("TRITON_INTERPRET", None)  # the smoke modes set it themselves
    result = subprocess.run(["bash", "benchmarks/gpu_suite.sh", "--dry-run"], cwd=REPO, env=env,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    merged = json.loads(next(tmp_path.glob("gpu-*-dryrun.json")).read_text())
    assert [s["step"] for s in merged["steps"]] == STEPS
    assert all(s["exit_status"] == 0 for s in merged["steps"]), merged["steps"]
    assert merged["dry_run"] and merged["commit"] and merged["versions"]["torch"]
    assert not (REPO / "benchmarks" / "results" / next(tmp_path.glob("gpu-*")).name).exists()

    methods = {row["method"] for row in merged["attention"]["results"]}
    assert {"triton:loop", "triton:preload", "sdpa:math", "flex"} <= methods  # flex: a skipped row off CUDA
    for row in merged["attention"]["results"]:
        if row["method"].startswith("triton"):
            assert max(row["gate_rel_err"].values()) < 1e-4 and row["fwd_bwd_ms"] > 0
    assert all(row["key_padding_mask"] for row in merged["attention_mask"]["results"])
    train = {(r["method"], r["seq"], r.get("checkpoint_layers")): r for r in merged["train"]["results"]}
    assert train[("ours", 256, True)]["tokens_per_s"] > 0 and train[("ours", 128, False)]["tokens_per_s"] > 0
    assert "hf" in {method for method, _, _ in train}
    assert merged["promoter_scan"]["windows_scored"] > 0
    assert "| attention | ok |" in result.stdout and "targets (smoke values" in result.stdout
