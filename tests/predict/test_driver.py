"""The predict driver on its own: window tiling, strands, strand combining, device and precision."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.predict.driver import (
    ScanWindow,
    combine_strands,
    iter_windows,
    resolve_device,
    resolve_precision,
    window_starts,
)


@pytest.mark.parametrize("length, window, stride, starts", [
    (250, 100, 100, [0, 100, 150]),  # 0, stride, then a tail window aligned to the record end
    (250, 100, 40, [0, 40, 80, 120, 150]),
    (200, 100, 100, [0, 100]),  # the windows end exactly at the record end: no extra window
    (300, 100, 150, [0, 150, 200]),  # stride > window: the gap is not scored, the end is
    (100, 100, 7, [0]),  # exactly one window long
    (60, 100, 100, [0]),  # shorter than a window: one window, as long as the record
])
def test_window_starts_cover_the_record_with_an_end_aligned_last_window(length, window, stride, starts):
    assert window_starts(length, window, stride) == starts


@pytest.mark.parametrize("window, stride", [(0, 10), (10, 0), (-1, 5)])
def test_window_and_stride_must_be_positive(window, stride):
    with pytest.raises(InputError, match="must be positive"):
        window_starts(100, window, stride)


def test_windows_are_0_based_half_open_with_the_minus_strand_right_after_the_plus(tmp_path):
    seq = "ACGTTGCA" * 30 + "NNNN"  # 244 bp
    fasta = tmp_path / "g.fa"
    fasta.write_text(f">chr1 desc\n{seq}\n>short\nACGTN\n")
    windows = list(iter_windows([fasta], window=100, stride=100))
    assert [(w.record, w.start, w.end, w.strand) for w in windows] == [
        ("chr1", 0, 100, "+"), ("chr1", 0, 100, "-"), ("chr1", 100, 200, "+"), ("chr1", 100, 200, "-"),
        ("chr1", 144, 244, "+"), ("chr1", 144, 244, "-"), ("short", 0, 5, "+"), ("short", 0, 5, "-")]
    for plus, minus in zip(windows[::2], windows[1::2]):
        assert plus.seq == (seq[plus.start:plus.end] if plus.record == "chr1" else "ACGTN")
        assert minus.seq == reverse_complement(plus.seq) and minus.n_fraction == plus.n_fraction
    assert windows[4].n_fraction == pytest.approx(0.04) and windows[6].n_fraction == pytest.approx(0.2)
    assert [w.strand for w in iter_windows([fasta], 100, 100, strands=("-",))] == ["-"] * 4


def _scored(strands: tuple[str, ...], locations: int) -> list[tuple[ScanWindow, torch.Tensor]]:
    scored = []
    for k in range(locations):
        for strand in strands:
            value = float(k) + (0.25 if strand == "-" else 0.0)
            scored.append((ScanWindow("chr1", 10 * k, 10 * k + 10, strand, "A" * 10, 0.0),
                           torch.tensor([value, 1.0 - value])))
    return scored


def test_both_strands_averaged_become_one_row_per_location_with_strand_dot():
    rows = list(combine_strands(_scored(("+", "-"), 3), ("+", "-"), "mean"))
    assert [(loc, w.start, strand) for loc, w, strand, _ in rows] == [(0, 0, "."), (1, 10, "."), (2, 20, ".")]
    assert [scores.tolist() for *_, scores in rows] == [[0.125, 0.875], [1.125, -0.125], [2.125, -1.125]]


def test_per_strand_rows_keep_each_strand_and_number_locations():
    rows = list(combine_strands(_scored(("+", "-"), 2), ("+", "-"), "per-strand"))
    assert [(loc, w.start, strand, scores[0].item()) for loc, w, strand, scores in rows] == [
        (0, 0, "+", 0.0), (0, 0, "-", 0.25), (1, 10, "+", 1.0), (1, 10, "-", 1.25)]


@pytest.mark.parametrize("strand", ["+", "-"])
def test_one_strand_is_never_averaged(strand):
    rows = list(combine_strands(_scored((strand,), 2), (strand,), "mean"))
    assert [(loc, s) for loc, _, s, _ in rows] == [(0, strand), (1, strand)]


def test_the_mean_keeps_the_scores_dtype():
    scored = [(w, s.double()) for w, s in _scored(("+", "-"), 1)]
    (_, _, _, scores), = combine_strands(scored, ("+", "-"), "mean")
    assert scores.dtype == torch.float64


def test_device_and_precision():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"
    assert resolve_precision("auto", torch.device("cuda")) == "bf16"
    assert resolve_precision("fp32", torch.device("cuda")) == "fp32"
    with pytest.raises(InputError, match="unknown device"):
        resolve_device("tpu:x")
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA GPU"):
            resolve_device("cuda")
