"""``bash benchmarks/gpu_suite.sh``: the budget of a 15-minute GPU window (a default call of at
most 510 s and an ``--extra`` call of at most 180 s, step limits, grace and overhead included),
checked before anything runs; and ``--dry-run``: both budgets, then every step in its smoke mode on
CPU, under its limit, merged into one file with a table (about two minutes on 2 cores). A dry run
allows a dirty tree (a developer's checkout) and records the flag either way."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEPS = ["env", "tests", "attention", "train", "promoter_scan", "attention_dense", "attention_mask", "attention_more",
         "train_all", "attention_variants"]


def suite(*flags: str, timeout: int = 60, **env: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHON": sys.executable, **env}
    for name in ("TRITON_INTERPRET", "SUITE_GIT_STATE"):  # the smoke modes set the first themselves
        environment.pop(name, None)
    return subprocess.run(["bash", "benchmarks/gpu_suite.sh", *flags], check=False, cwd=REPO, env=environment,
                          capture_output=True, text=True, timeout=timeout)


def test_both_calls_of_a_window_fit_their_budgets():
    result = suite("--check-budget")
    assert result.returncode == 0, result.stderr
    totals = {call: int(total) for call, total, allowed in
              re.findall(r"budget of the (default|--extra) call: .* = (\d+) s <= (\d+) s", result.stderr)}
    assert set(totals) == {"default", "--extra"} and totals["default"] <= 510 and totals["--extra"] <= 180


@pytest.mark.parametrize("override, call", [({"LIMIT_attention": "400"}, "default"),
                                            ({"LIMIT_attention_mask": "80"}, "--extra")])
def test_limits_over_a_calls_budget_stop_the_check_and_the_dry_run_before_anything_runs(tmp_path, override, call):
    for flags in (["--check-budget"], ["--dry-run"]):
        result = suite(*flags, OUT=str(tmp_path / "out"), **override)
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert result.returncode == 2 and len(errors) == 1, result.stderr
        assert f"the {call} call's step limits add up to more than the call allows" in errors[0]
        assert not (tmp_path / "out").exists()  # no step ran


def test_a_call_checks_its_own_steps_against_its_budget(tmp_path):
    result = suite("--only", "env,attention_more,attention_variants", OUT=str(tmp_path / "out"))
    assert result.returncode == 2 and "the --only call's step limits" in result.stderr
    result = suite("--extra", OUT=str(tmp_path / "out"), LIMIT_attention_dense="170")
    assert result.returncode == 2 and "the --extra call's step limits" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_dry_run_runs_every_step_and_merges_their_results(tmp_path):
    pytest.importorskip("triton")
    results_before = set((REPO / "benchmarks" / "results").rglob("*"))
    result = suite("--dry-run", timeout=900, OUT=str(tmp_path), OMP_NUM_THREADS="1")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    merged = json.loads((tmp_path / "gpu_suite.json").read_text())
    assert [s["step"] for s in merged["steps"]] == STEPS
    assert all(s["exit_status"] == 0 for s in merged["steps"]), merged["steps"]
    assert merged["dry_run"] and merged["commit"] and merged["versions"]["torch"]
    assert merged["call"]["profile"] == "dry-run" and merged["call"]["seconds_before_merge"] > 0
    assert set((REPO / "benchmarks" / "results").rglob("*")) == results_before  # a dry run is not a result
    # the tree was recorded once, before the steps, and every result file carries that record
    tree = json.loads((tmp_path / "git.json").read_text())
    assert isinstance(tree["dirty"], bool) and tree["dirty"] == bool(tree["git_status"])
    for name in STEPS[2:]:
        assert (merged[name]["commit"], merged[name]["dirty"]) == (tree["commit"], tree["dirty"]), name
    assert (merged["commit"], merged["dirty"], merged["git_status"]) == (tree["commit"], tree["dirty"],
                                                                        tree["git_status"])

    def methods(name):
        return {row["method"] for row in merged[name]["results"]}
    ours = f"triton:{merged['attention']['default_variant']}"
    assert methods("attention") == {ours, "flex"}  # the default call: ours against Flex (skipped off CUDA)
    assert methods("attention_dense") == {ours, "sdpa:math", "hf"}  # cuDNN off CUDA: math; HF: GPU only
    assert {ours, "flex", "flex:max-autotune"} == methods("attention_more")
    for row in merged["attention"]["results"] + merged["attention_dense"]["results"]:
        if row["method"].startswith("triton"):  # gated on the whole plan that is timed, then timed
            assert row["gate"]["passed"] and set(row["gate"]["rel_err"]) == {"out", "dq", "dk", "dv"}
            assert row["fwd_bwd_ms"] > 0 and row["timing"]["fwd"]["iterations"] == 1  # one call off CUDA
    assert all(row["key_padding_mask"] for row in merged["attention_mask"]["results"])
    # the default call's training: the equal-tokens rows alone, nothing at --seq x --batch
    assert {(r["method"], r["role"]) for r in merged["train"]["results"]} == {("ours", "scaling")}
    train = {(r["method"], r["role"], r["seq"]): r for r in merged["train_all"]["results"]}
    assert train[("ours", "scaling", 128)]["tokens_per_step"] == train[("ours", "scaling", 256)]["tokens_per_step"]
    assert train[("ours", "memory", 256)]["checkpoint_layers"] and ("hf", "vs_hf", 128) in train
    assert all(r["model_flops_per_step"] > 0 and r["mfu"] is None for r in train.values())  # no peak off CUDA
    assert ("ours+compile", "scaling", 128) in train  # compiled layers, timed beside the eager row
    assert merged["promoter_scan"]["windows_scored"] > 0
    variants = {row["method"]: row for row in merged["attention_variants"]["results"]}
    assert {"triton:preload-fused", "triton:preload-fused-atomic-dq"} <= set(variants)
    assert all(row["gate"]["passed"] for row in variants.values() if row["method"].startswith("triton"))
    assert {line["status"] for line in merged["target_table"]} == {"not measured"}  # smoke values
    assert "| attention | ok |" in result.stdout and "| not measured |" in result.stdout
    assert "budget of the default call" in result.stderr and "budget of the --extra call" in result.stderr
