"""The suite's merge step reads what a step left, also when the step was cut by its timeout."""
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from benchmarks.gpu_suite_report import count_test_outcomes, merge, targets  # noqa: E402


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


def test_graph_replays_give_the_gpu_time_ratio_to_flex():
    graph = {"results": [{"seq": 16384, "method": "triton:loop", "eager_ms": 0.9, "graph_ms": 0.5},
                         {"seq": 16384, "method": "triton:preload-fused", "eager_ms": 0.9, "graph_ms": 0.4},
                         {"seq": 16384, "method": "flex", "eager_ms": 1.0, "graph_ms": 0.8},
                         {"seq": 65536, "method": "flex", "failed": "OutOfMemoryError"}]}
    found = targets(None, None, graph)
    assert found == {"flex_over_ours_graph_16384": 2.0}


def test_targets_compare_our_best_variant_with_each_baseline():
    attention = {"results": [row("triton:loop", 16384, 2.0, peak_mib=100.0), row("triton:preload", 16384, 1.0,
                                                                                  peak_mib=100.0),
                             row("flex", 16384, 1.5), row("sdpa:flash", 16384, 20.0), row("sdpa:cudnn", 16384, 30.0),
                             row("triton:loop", 65536, 4.0, peak_mib=410.0)]}
    found = targets(attention, {"summary": {"ours_over_hf_at_4k": 6.0, "best_variant_at_seq": "loop"}})
    assert found["flex_over_ours_16384"] == 1.5 and found["sdpa_over_ours_16384"] == 20.0
    assert found["peak_memory_64k_over_16k"] == 4.1 and found["train_ours_over_hf_at_4k"] == 6.0
    assert "hf_over_ours_16384" not in found


def test_merge_keeps_the_steps_that_finished_and_marks_the_timed_out_one(tmp_path):
    (tmp_path / "steps.tsv").write_text("env\t0\t3\nattention\t124\t215\n")
    (tmp_path / "env.json").write_text(json.dumps({"device": "NVIDIA H100", "commit": "abc", "versions": {}}))
    (tmp_path / "attention.json").write_text(json.dumps({"results": [row("triton:loop", 4096, 1.0)]}))
    merged = json.loads(merge(tmp_path, "2026-01-01-0000", dry_run=True).read_text())
    assert [s["timed_out"] for s in merged["steps"]] == [False, True]
    assert merged["attention"]["results"][0]["method"] == "triton:loop" and merged["train"] is None


def test_graph_overhead_keeps_no_timing_of_a_method_that_disagrees_with_its_reference():
    import torch

    from benchmarks.graph_overhead import errors, gate

    reference = (torch.ones(4),) * 4
    timed = {"eager_ms": 0.1, "graph_ms": 0.05, "eager_over_graph": 2.0}
    good, broken = dict(timed), dict(timed)
    gate(good, errors(reference, reference), "reference")
    gate(broken, errors((torch.zeros(4),) * 4, reference), "reference")  # a kernel that outputs nothing
    assert good["graph_ms"] == 0.05 and "failed" not in good
    assert "graph_ms" not in broken and broken["untrusted_timings"] == timed and "failed" in broken
    assert targets(None, None, {"results": [{"seq": 4096, "method": "triton:loop", **broken},
                                            {"seq": 4096, "method": "flex", **good}]}) == {}
