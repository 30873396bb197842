"""The predict driver on its own: strand combining, device and precision (window tiling:
``test_tiling.py``)."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.inference.device import resolve_device, resolve_precision
from bigbird_dna.inference.scan import combine_strands
from bigbird_dna.inference.windows import ScanWindow


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
