"""The suite's merge step reads what a step left, also when the step was cut by its timeout."""
import json

from benchmarks.common.gpu_suite_report import count_test_outcomes, merge
from benchmarks.common.targets import NOT_MEASURED, TARGETS


def row(method, seq, ms, **extra):
    return {"method": method, "batch": 1, "seq": seq, "fwd_bwd_ms": ms, "fwd_tflops": 300.0, "bwd_tflops": 200.0,
            "key_padding_mask": False, **extra}


def test_outcomes_are_counted_from_a_log_cut_by_the_timeout(tmp_path):
    log = tmp_path / "tests.log"
    log.write_text("tests/a.py::test_x PASSED [ 10%]\ntests/a.py::test_y[loop] FAILED [ 20%]\n"
                   "tests/b.py::test_z SKIPPED (needs CUDA) [ 30%]\ntests/b.py::test_w ")  # killed mid-test
    outcomes = count_test_outcomes(log)
    assert outcomes["tests"] == {"PASSED": 1, "FAILED": 1, "SKIPPED": 1}
    assert outcomes["failed"] == ["tests/a.py::test_y[loop]"]


def test_outcomes_are_counted_from_an_xdist_log(tmp_path):
    log = tmp_path / "tests.log"
    log.write_text("[gw0] [  4%] PASSED tests/a.py::test_x \n[gw3] [ 8%] FAILED tests/a.py::test_y[preload] \n"
                   "[gw1] [ 12%] SKIPPED tests/b.py::test_z \n")
    outcomes = count_test_outcomes(log)
    assert outcomes["tests"] == {"PASSED": 1, "FAILED": 1, "SKIPPED": 1}
    assert outcomes["failed"] == ["tests/a.py::test_y[preload]"]


def test_merge_keeps_the_steps_that_finished_and_records_the_tree_and_the_targets(tmp_path):
    (tmp_path / "steps.tsv").write_text("env\t0\t3\t15\nattention\t124\t180\t175\n")
    (tmp_path / "git.json").write_text(json.dumps({"commit": "abc", "dirty": True, "git_status": "?? stray.txt"}))
    (tmp_path / "env.json").write_text(json.dumps({"device": "NVIDIA H100", "commit": "abc", "versions": {}}))
    (tmp_path / "attention.json").write_text(json.dumps({"commit": "def", "results": [row("triton:loop", 4096, 1.0)]}))
    merged = json.loads(merge(tmp_path, "2026-01-01-0000", dry_run=True, call={"profile": "default"}).read_text())
    assert [s["timed_out"] for s in merged["steps"]] == [False, True]
    assert [s["limit_s"] for s in merged["steps"]] == [15, 175] and merged["call"] == {"profile": "default"}
    assert merged["attention"]["results"][0]["method"] == "triton:loop" and merged["train"] is None
    assert (merged["commit"], merged["dirty"], merged["git_status"]) == ("abc", True, "?? stray.txt")
    assert merged["other_commit_in"] == ["attention"]  # a step file from another commit is named
    assert [line["key"] for line in merged["target_table"]] == [key for key, *_ in TARGETS]
    assert {line["status"] for line in merged["target_table"]} == {NOT_MEASURED}
