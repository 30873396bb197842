"""In-silico saturation mutagenesis (ISM): every base changed to each of the other three letters.

For a sequence ``x`` of length ``L`` and a span ``[a, b)`` (0-based, half-open; default the whole
sequence), the result is float32 ``[L, 4]``: ``f(x with base i set to letter c) - f(x)`` in column
``c`` (``ACGT``) of row ``i``, 0 in the observed letter's column, NaN outside the span. ``f`` is the
target's logit or probability (:mod:`bigbird_dna.attribution.targets`). A base that is not
A/C/G/T (N, IUPAC) gets all four letters.

Every mutant is scored as ``predict`` scores a window, through
:func:`~bigbird_dna.inference.scan.score_windows` (the same tokenization, batching, strand averaging
and, on a GPU, CUDA-graph replay; in fp32, see :mod:`bigbird_dna.attribution`), one sequence at a
time, so that every batch holds windows of one length and no mutant is padded. With
``strands="both"`` each mutant is the mean of its two strands, as ``predict(..., strands="both")``.
Cost: ``3 (b - a) + 1`` windows per strand.
"""

from __future__ import annotations

from typing import Callable, Iterator

import torch

from bigbird_dna.attribution.bases import LETTERS
from bigbird_dna.attribution.targets import Target
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.inference.scan import combine_strands, score_windows
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.tokenizer import DNATokenizer

Forward = Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]


def mutations(seq: str, start: int, end: int) -> Iterator[tuple[int, int, str]]:
    """``(position, letter column, mutant sequence)`` for every base of ``[start, end)`` and every
    letter other than the observed one, in position then ``ACGT`` order."""
    upper = seq.upper()
    for position in range(start, end):
        for column, letter in enumerate(LETTERS):
            if upper[position] != letter:
                yield position, column, seq[:position] + letter + seq[position + 1:]


def ism_deltas(forward: Forward, tokenizer: DNATokenizer, max_tokens: int, device: torch.device, precision: str,
               seq: str, target: Target, strands: tuple[str, ...], span: tuple[int, int],
               batch_size: int, tick: Callable[[int], None] = lambda n: None) -> torch.Tensor:
    """ISM of one sequence (module docstring): float32 ``[L, 4]``.

    Args:
        forward: ``(input_ids [B, T], mask [B, T] or None) -> [B, C]`` logits or probabilities, as
            ``target.scale`` asks (e.g. ``SequenceClassifier.logits``, possibly CUDA-graphed).
        strands: ``("+",)``, ``("-",)`` or ``("+", "-")`` (mean of the two).
        span: ``(a, b)``, 0-based half-open, the bases to mutate.
        tick: called with the number of windows scored, for a progress bar.
    """
    start, end = span
    edits = [(position, column) for position, column, _ in mutations(seq, start, end)]
    sequences = [seq] + [mutant for _, _, mutant in mutations(seq, start, end)]
    windows = (ScanWindow("ism", 0, len(s), strand, reverse_complement(s) if strand == "-" else s,
                          ambiguous_fraction(s))
               for s in sequences for strand in strands)
    scored = score_windows(forward, tokenizer, windows, batch_size, max_tokens, device, precision)
    values = []
    for _, _, _, scores in combine_strands(_counted(scored, tick), strands, "mean"):
        values.append(float(scores[target.column]))
    deltas = torch.full((len(seq), 4), float("nan"))
    deltas[start:end] = 0.0
    reference = values[0]
    for (position, column), value in zip(edits, values[1:]):
        deltas[position, column] = value - reference
    return deltas


def _counted(scored, tick):
    for item in scored:
        tick(1)
        yield item


def ism_per_base(deltas: torch.Tensor) -> torch.Tensor:
    """``[L]``: how much each observed base raises the target over the mean of all four letters,
    ``-mean_c deltas[i, c]`` (the observed letter's delta is 0); NaN outside the span."""
    return -deltas.mean(dim=-1)
