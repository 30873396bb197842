"""The arithmetic behind the suite's numbers: repeat statistics (median of repeat medians, spread,
IQR) and model-FLOPs utilisation. No timing is asserted."""
import pytest
import torch

from benchmarks.common import mfu
from benchmarks.common.timing import bench, repeat_stats


def test_the_reported_figure_is_the_median_of_the_repeat_medians():
    # three repeats of five calls; the second repeat has one outlier, the third is slower overall
    samples = [[1.0, 1.1, 1.0, 0.9, 1.2], [1.0, 1.0, 50.0, 1.1, 0.9], [2.0, 2.1, 1.9, 2.0, 2.2]]
    stats = repeat_stats(samples)
    assert stats["repeat_medians_ms"] == [1.0, 1.0, 2.0]
    assert stats["ms"] == 1.0  # neither the outlier nor the slow repeat moves it
    assert (stats["min_repeat_ms"], stats["max_repeat_ms"]) == (1.0, 2.0)
    assert stats["spread_pct"] == pytest.approx(100.0)
    assert stats["iterations"] == 5 and stats["repeats"] == 3
    q1, q3 = stats["iqr_ms"]
    assert q1 == pytest.approx(1.0) and q3 == pytest.approx(2.0)


def test_identical_repeats_have_no_spread_and_one_call_is_its_own_statistics():
    assert repeat_stats([[3.0] * 50] * 3)["spread_pct"] == 0.0
    one = repeat_stats([[7.5]])
    assert one["ms"] == 7.5 and one["iqr_ms"] == [7.5, 7.5] and one["iterations"] == one["repeats"] == 1
    with pytest.raises(ValueError):
        repeat_stats([])
    with pytest.raises(ValueError):
        repeat_stats([[1.0], []])


def test_off_cuda_a_timing_is_one_call():
    calls = []
    stats = bench(lambda: calls.append(1), "cpu")
    assert calls == [1] and stats["iterations"] == 1 and stats["repeats"] == 1 and stats["ms"] >= 0


def test_peaks_come_from_the_device_name_pcie_before_sxm():
    assert mfu.peak_bf16_tflops("NVIDIA H100 80GB HBM3") == 989.4
    assert mfu.peak_bf16_tflops("NVIDIA H100 PCIe") == 756.5
    assert mfu.peak_bf16_tflops("NVIDIA H200") == 989.4
    assert mfu.peak_bf16_tflops("NVIDIA GeForce RTX 4090") is None and mfu.peak_bf16_tflops(None) is None


def test_model_flops_are_six_n_tokens_plus_forward_and_two_and_a_half_backward_attention():
    # 2 layers of 10 and 30 nonzero blocks (all heads), block 64, head dim 64, batch 4
    attention = mfu.attention_flops_per_step(4, [10, 30], 64, 64)
    forward = 4 * 40 * 4 * 64 * 64 * 64
    assert attention == forward * 3.5
    flops = mfu.model_flops_per_step(85_000_000, 65_536, attention)
    assert flops == 6 * 85_000_000 * 65_536 + attention
    # that work in 0.1 s on a 989.4 TFLOP/s part
    assert mfu.mfu(flops, 0.1, 989.4) == pytest.approx(flops / 0.1 / 989.4e12)
    assert mfu.mfu(flops, 0.1, None) is None


def test_non_embedding_parameters_leave_out_embeddings_and_a_decoder_tied_to_them():
    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens, self.positions = torch.nn.Embedding(100, 8), torch.nn.Embedding(16, 8)
            self.layer = torch.nn.Linear(8, 8)  # 72
            self.decoder = torch.nn.Linear(8, 100)  # weight tied below, bias 100 counts
            self.decoder.weight = self.tokens.weight

    assert mfu.non_embedding_params(Tiny()) == 72 + 100
