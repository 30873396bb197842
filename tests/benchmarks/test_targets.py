"""The suite's target table, judged from hand-made result files: met, not met, not measured."""
from benchmarks.common.targets import MET, NOT_MEASURED, NOT_MET, TARGETS, markdown, target_table

GPU_ENV = {"device_type": "cuda", "device": "NVIDIA H100 80GB HBM3"}


def attention_row(method, seq, fwd_bwd_ms, batch=1, **extra):
    row = {"method": method, "batch": batch, "seq": seq, "key_padding_mask": False, "fwd_bwd_ms": fwd_bwd_ms,
           "timing": {"fwd_bwd": {"spread_pct": 2.0}}, "gate": {"passed": True}}
    return {**row, **extra}


def attention_file(rows):
    return {"environment": GPU_ENV, "default_variant": "preload-fused", "results": rows}


def train_row(seq, batch, tokens_per_s, **extra):
    return {"method": "ours", "role": "scaling", "seq": seq, "batch": batch, "tokens_per_step": seq * batch,
            "tokens_per_s": tokens_per_s, "step_ms": 100.0, "model_tflops": 300.0, "peak_bf16_tflops": 989.4,
            "mfu": 0.3, **extra}


def by_key(table):
    return {line["key"]: line for line in table}


def test_every_target_has_one_line_and_nothing_is_measured_without_files():
    table = target_table({})
    assert [line["key"] for line in table] == [key for key, *_ in TARGETS]
    assert {line["status"] for line in table} == {NOT_MEASURED}
    assert all(line["detail"] for line in table)
    assert markdown(table).count("| not measured |") == len(TARGETS)


def test_attention_ratios_are_met_or_not_against_the_threshold():
    rows = [attention_row("triton:preload-fused", 4096, 0.5, fwd_tflops=100.0, bwd_tflops=90.0),
            attention_row("triton:loop", 4096, 0.1),  # another variant: not the default, never read
            attention_row("flex", 4096, 0.6), attention_row("flex:max-autotune", 4096, 0.45),
            attention_row("hf", 4096, 12.0),
            attention_row("triton:preload-fused", 16384, 1.0, fwd_tflops=360.0, bwd_tflops=240.0),
            attention_row("flex", 16384, 1.4), attention_row("sdpa:cudnn", 16384, 18.0),
            attention_row("triton:preload-fused", 16384, 0.2, batch=4),  # equal-tokens row: not B=1
            attention_row("triton:preload-fused", 65536, 2.0, fwd_tflops=300.0, bwd_tflops=260.0),
            attention_row("sdpa:cudnn", 65536, 100.0)]
    table = by_key(target_table({"attention": attention_file(rows)}))
    # 4K: the faster Flex row (max-autotune, 0.45 ms) over ours 0.5 ms = 0.9x < 1.0
    assert table["flex_eager_4k"]["status"] == NOT_MET and abs(table["flex_eager_4k"]["measured"] - 0.9) < 1e-9
    assert "flex:max-autotune" in table["flex_eager_4k"]["detail"]
    assert table["flex_eager_16k"]["status"] == MET and table["flex_eager_16k"]["measured"] == 1.4
    assert table["cudnn_16k"]["status"] == MET and table["cudnn_16k"]["measured"] == 18.0  # exactly the threshold
    assert table["cudnn_64k"]["status"] == NOT_MET and table["cudnn_64k"]["measured"] == 50.0
    assert table["hf_attention_4k"]["status"] == MET and table["hf_attention_4k"]["measured"] == 24.0
    assert table["fwd_tflops_16k"]["status"] == MET and table["bwd_tflops_16k"]["status"] == NOT_MET
    assert table["fwd_tflops_64k"]["status"] == NOT_MET and table["bwd_tflops_64k"]["status"] == MET


def test_a_failed_gate_a_skipped_baseline_or_a_smoke_run_is_not_measured():
    rows = [attention_row("triton:preload-fused", 4096, 0.5), attention_row("flex", 4096, 0.1, failed="gate"),
            {"method": "flex:max-autotune", "batch": 1, "seq": 4096, "skipped": "failed: NoValidChoicesError"},
            {"method": "triton:preload-fused", "batch": 1, "seq": 16384, "key_padding_mask": False,
             "failed": "correctness gate: relative errors over 0.02"},
            attention_row("flex", 16384, 1.4)]
    table = by_key(target_table({"attention": attention_file(rows)}))
    flex_4k = table["flex_eager_4k"]
    assert flex_4k["status"] == NOT_MEASURED and "NoValidChoicesError" in flex_4k["detail"]
    assert table["flex_eager_16k"]["status"] == NOT_MEASURED and "correctness gate" in table["flex_eager_16k"]["detail"]
    assert table["cudnn_16k"]["status"] == NOT_MEASURED
    smoke = attention_file([attention_row("triton:preload-fused", 4096, 0.5), attention_row("flex", 4096, 9.0)])
    smoke["environment"] = {"device_type": "cpu"}
    assert by_key(target_table({"attention": smoke}))["flex_eager_4k"]["status"] == NOT_MEASURED


def test_training_mfu_and_scaling_read_the_equal_tokens_rows():
    train = {"environment": GPU_ENV, "results": [
        train_row(4096, 16, 400_000.0, mfu=0.36), train_row(16384, 4, 380_000.0), train_row(65536, 1, 300_000.0),
        train_row(4096, 4, 999_999.0, role="vs_hf", mfu=0.9)]}  # not a scaling row: never read
    table = by_key(target_table({"train": train}))
    assert table["train_mfu_4k"]["status"] == MET and table["train_mfu_4k"]["measured"] == 0.36
    assert table["train_scaling_16k"]["status"] == MET and table["train_scaling_16k"]["measured"] == 0.95
    assert table["train_scaling_64k"]["status"] == NOT_MET and table["train_scaling_64k"]["measured"] == 0.75
    assert "36.0%" in markdown(list(table.values()))


def test_training_without_a_known_peak_or_with_unequal_tokens_is_not_measured():
    train = {"environment": {**GPU_ENV, "device": "Some GPU"}, "results": [
        train_row(4096, 4, 400_000.0, mfu=None, peak_bf16_tflops=None), train_row(16384, 4, 380_000.0)]}
    table = by_key(target_table({"train": train}))
    assert table["train_mfu_4k"]["status"] == NOT_MEASURED and "Some GPU" in table["train_mfu_4k"]["detail"]
    assert table["train_scaling_16k"]["status"] == NOT_MEASURED and "differ" in table["train_scaling_16k"]["detail"]
    assert table["train_scaling_64k"]["status"] == NOT_MEASURED
    assert by_key(target_table({"train": {**train, "smoke": True}}))["train_mfu_4k"]["detail"].endswith("not on a GPU")


def test_the_promoter_scan_needs_both_strands_and_a_real_run():
    scan = {"smoke": False, "strands": "both", "gbp_per_min": 0.6, "genome_bp": 200_000_000, "seconds": 20.0}
    def status(**change):
        return by_key(target_table({"promoter_scan": {**scan, **change}}))["promoter_scan"]["status"]
    assert status() == MET and status(gbp_per_min=0.1) == NOT_MET
    assert status(strands="forward") == NOT_MEASURED and status(smoke=True) == NOT_MEASURED
    small = by_key(target_table({"promoter_scan": {**scan, "genome_bp": 20_000_000}}))["promoter_scan"]  # under 200 Mbp
    assert small["status"] == NOT_MEASURED and "200 Mbp" in small["detail"]


def test_a_malformed_file_is_reported_not_raised():
    table = by_key(target_table({"attention": {"environment": GPU_ENV, "results": [{"method": "triton:x"}]}}))
    assert table["flex_eager_4k"]["status"] == NOT_MEASURED


def test_mfu_takes_the_better_of_eager_and_compiled_but_scaling_reads_eager_rows_only():
    train = {"environment": GPU_ENV, "results": [
        train_row(4096, 16, 400_000.0, mfu=0.30), train_row(16384, 4, 380_000.0),
        train_row(4096, 16, 500_000.0, mfu=0.37, method="ours+compile")]}
    table = by_key(target_table({"train": train}))
    assert table["train_mfu_4k"]["status"] == MET and table["train_mfu_4k"]["measured"] == 0.37
    assert table["train_mfu_4k"]["detail"].startswith("ours+compile 16 x 4096")
    assert table["train_scaling_16k"]["measured"] == 0.95  # over the eager 4K row, not the compiled one
    train["results"][2]["mfu"] = 0.2
    assert by_key(target_table({"train": train}))["train_mfu_4k"]["measured"] == 0.30


def test_each_target_reads_the_file_of_the_call_that_timed_its_baseline():
    """The default call times ours against Flex (``attention``), the --extra call against cuDNN and
    HF (``attention_dense``); ours and the baseline of a ratio always come from one file."""
    flex = attention_file([attention_row("triton:preload-fused", 16384, 1.0, fwd_tflops=360.0, bwd_tflops=260.0),
                           attention_row("flex", 16384, 1.5)])
    dense = attention_file([attention_row("triton:preload-fused", 16384, 2.0),
                            attention_row("sdpa:cudnn", 16384, 40.0)])
    default_call = by_key(target_table({"attention": flex}))
    assert default_call["flex_eager_16k"]["measured"] == 1.5 and default_call["fwd_tflops_16k"]["status"] == MET
    assert default_call["cudnn_16k"]["status"] == NOT_MEASURED  # no cuDNN row in the default call
    extra_call = by_key(target_table({"attention_dense": dense}))
    assert extra_call["cudnn_16k"]["measured"] == 20.0  # over the ours row of the same file, not 40x
    assert extra_call["flex_eager_16k"]["status"] == NOT_MEASURED
    assert "no attention_more or attention results" in extra_call["flex_eager_16k"]["detail"]
    both = by_key(target_table({"attention": flex, "attention_dense": dense}))
    assert both["cudnn_16k"]["measured"] == 20.0 and both["flex_eager_16k"]["measured"] == 1.5
