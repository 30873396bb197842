"""Masked-marginal log-likelihoods of DNA sequences under an MLM model (Evo's ``score_sequences``,
the Nucleotide Transformer's zero-shot scores).

**Per base** (``spans=None``). Each sequence is read as in training, ``[CLS] tokens [SEP]``, and
every token is replaced by ``[MASK]`` on its own, one forward pass per token, so the token's score
is ``log p(x_t | every other token)`` (natural log), the masked marginal of the literature. A token
spelling ``n`` bases gives each of them ``log p / n``, so a sequence's sum is the sum over its
tokens: with a char tokenizer a base gets its own masked marginal; with k-mer or BPE tokens a base
gets its share of its token's. A token holding any base other than A, C, G, T (N, IUPAC codes,
``[UNK]``) is not scored: its bases are NaN, and sums and means skip them.

**Spans** (``spans=[(a, b), ...]``, 0-based half-open, one per sequence). The tokens that overlap
``[a, b)`` are masked together in one forward pass; their log p are spread over their bases as
above and every other base is NaN. The sum is then ``sum_{t in T} log p(x_t | x without T)``, what
``python -m bigbird_dna.variants`` reports as ``llr`` (alt sum minus ref sum). With a char
tokenizer and a one-base span this is exactly the per-base score of that base.

**Strands.** ``"+"`` scores each sequence as given. ``"both"`` also scores its reverse complement
(a span mirrored to ``[L - b, L - a)``) and maps those scores back onto the forward bases: a base's
score is the mean of its two strands' scores, and :attr:`Likelihoods.sums` / :attr:`~Likelihoods.means`
are each strand's sum / mean, then averaged (under BPE the two strands may cover different bases).

**Cost.** Per base: ``T`` forward passes of a ``T + 2``-token row for a sequence of ``T`` tokens,
``batch_size`` rows per pass, so time grows as ``T**2`` per sequence (linear attention times ``T``
passes); ``strands="both"`` doubles it. Measured on the tiny default model (128 wide, 2 layers,
conv 9, char tokens; untrained weights), fp32, on 2 idle CPU cores: a 510-bp sequence (its whole
512-token context) takes 3.8 s at ``batch_size=16`` (7.4 ms per masked row) and 3.9 s at 64
(``python benchmarks/cpu_score.py``; ``benchmarks/results/2026-11-25_cpu-2core/cpu_score.json``). The pass count is what
grows with length.
Spans: one pass per sequence and strand.

**Batching.** Rows of one pass always have one token length (rows are grouped by length), so no
row is padded and a score does not depend on which other sequences share the call.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby
from typing import Iterable, Protocol, Sequence

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.tokenizer import DNATokenizer

STRANDS = ("+", "both")
# Passes (rows) from which a progress bar is shown when ``progress=None``.
PROGRESS_FROM_ROWS = 4096
BASES = frozenset("ACGT")


class MaskedLanguageModel(Protocol):
    """What scoring reads from a model: a :class:`~bigbird_dna.pretrained.BigBirdDNA` of an MLM export.

    ``module.encoder(input_ids [B, T], None) -> hidden [B, T, H]`` (scored rows are never padded) and
    ``module.head(hidden [N, H]) -> logits [N, vocab]``; ``encode`` gives ``[CLS] tokens [SEP]``
    right-padded and refuses a sequence longer than the model's context.
    """

    tokenizer: DNATokenizer
    module: torch.nn.Module
    device: torch.device
    precision: str

    def encode(self, seqs: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]: ...


@dataclass(frozen=True)
class Likelihoods:
    """Per-base masked-marginal log-likelihoods (natural log) of ``N`` sequences.

    Attributes:
        strands: one list per strand scored (``+`` first), each holding a float32 ``[L_i]`` tensor
            per sequence on the forward bases (a ``-`` strand's scores are mirrored back); NaN where
            a base is not scored.
    """

    strands: tuple[list[torch.Tensor], ...]

    @property
    def per_base(self) -> list[torch.Tensor]:
        """``[L_i]`` per sequence: the mean over the strands scored (NaN where any strand is NaN)."""
        return [torch.stack(rows).mean(0) for rows in zip(*self.strands)]

    @property
    def sums(self) -> torch.Tensor:
        """``[N]``: each strand's sum over its scored bases (0 if none), averaged over strands."""
        return torch.tensor([[float(s.nansum()) for s in strand] for strand in self.strands]).mean(0)

    @property
    def means(self) -> torch.Tensor:
        """``[N]``: each strand's mean over its scored bases (NaN if none), averaged over strands."""
        return torch.tensor([[float(s.nanmean()) for s in strand] for strand in self.strands]).mean(0)


def _masked_log_probs(model: MaskedLanguageModel, seqs: list[str], jobs: list[tuple[int, list[int]]],
                      batch_size: int, progress: bool | None) -> list[torch.Tensor]:
    """For each job ``(sequence index, token indices)``: sequence ``i`` with those tokens (0-based,
    ``[CLS]`` not counted) all masked in one row; returns ``log p`` of each one's true token, ``[k]``."""
    from tqdm.auto import tqdm

    ids, attention = model.encode(seqs)  # [N, T] with [CLS] at 0
    lengths = attention.sum(1).tolist()
    order = sorted(range(len(jobs)), key=lambda j: lengths[jobs[j][0]])
    out: list[torch.Tensor] = [torch.empty(0)] * len(jobs)
    show = len(jobs) >= PROGRESS_FROM_ROWS if progress is None else progress
    autocast = torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=model.precision == "bf16")
    with tqdm(total=len(jobs), desc="scoring", unit="pass", disable=not show) as bar, \
            torch.inference_mode(), autocast:
        for length, group in groupby(order, key=lambda j: lengths[jobs[j][0]]):
            group = list(group)
            for first in range(0, len(group), batch_size):
                chunk = group[first:first + batch_size]
                rows = ids[[jobs[j][0] for j in chunk], :length]  # [B, T], no padding
                targets = torch.zeros_like(rows, dtype=torch.bool)
                for row, j in enumerate(chunk):
                    targets[row, [t + 1 for t in jobs[j][1]]] = True
                masked = rows.masked_fill(targets, model.tokenizer.mask_id).to(model.device)
                hidden = model.module.encoder(masked, None)  # every token real: no key-padding path
                logits = model.module.head(hidden[targets.to(model.device)]).float()  # [masked, vocab]
                logp = logits.log_softmax(-1).gather(-1, rows[targets].to(model.device)[:, None])[:, 0].cpu()
                for j, part in zip(chunk, logp.split([len(jobs[j][1]) for j in chunk])):
                    out[j] = part
                bar.update(len(chunk))
    return out


def _score_strand(model: MaskedLanguageModel, seqs: list[str], spans: list[tuple[int, int]] | None,
                  batch_size: int, progress: bool | None) -> list[torch.Tensor]:
    """Per-base scores of ``seqs`` as given (module docstring), ``[L_i]`` each."""
    offsets = model.tokenizer.offsets(seqs)
    scorable = [[set(seq[a:b].upper()) <= BASES for a, b in tokens] for seq, tokens in zip(seqs, offsets)]
    if spans is None:
        jobs = [(i, [t]) for i, ok in enumerate(scorable) for t, good in enumerate(ok) if good]
    else:
        jobs = [(i, [t for t, (a, b) in enumerate(tokens) if a < end and b > start])
                for i, (tokens, (start, end)) in enumerate(zip(offsets, spans))]
        jobs = [(i, tokens) for i, tokens in jobs if any(scorable[i][t] for t in tokens)]  # else nothing to score
    scores = [torch.full((len(seq),), float("nan")) for seq in seqs]
    for (i, tokens), logp in zip(jobs, _masked_log_probs(model, seqs, jobs, batch_size, progress)):
        for t, value in zip(tokens, logp.tolist()):
            a, b = offsets[i][t]
            if scorable[i][t]:
                scores[i][a:b] = value / (b - a)
    return scores


def masked_likelihoods(model: MaskedLanguageModel, seqs: Iterable[str],
                       spans: Sequence[tuple[int, int]] | None = None, strands: str = "+",
                       batch_size: int = 64, progress: bool | None = None) -> Likelihoods:
    """Masked-marginal log-likelihoods of ``seqs`` (see the module docstring for the method and cost).

    Args:
        model: an MLM model (:class:`MaskedLanguageModel`), e.g. a ``BigBirdDNA`` of an MLM export.
        seqs: DNA strings of any case (a single string counts as one sequence), each within the
            model's context.
        spans: ``None``: every token masked on its own (per-base scores); else one ``[a, b)`` per
            sequence (0-based, half-open): the tokens overlapping it masked together.
        strands: ``"+"`` (as given) or ``"both"`` (with the reverse complement, mirrored back).
        batch_size: rows (masked copies of a sequence) per forward pass.
        progress: a tqdm bar over forward-pass rows; ``None`` = only from 4,096 rows.

    Raises:
        InputError: bad ``strands``, ``batch_size`` or ``spans``, or a sequence longer than the context.
    """
    seqs = [seqs] if isinstance(seqs, str) else list(seqs)
    if strands not in STRANDS:
        raise InputError(f"strands={strands!r}: use one of {', '.join(STRANDS)}.")
    if batch_size < 1:
        raise InputError(f"batch_size must be positive, got {batch_size}.")
    if spans is not None:
        spans = [(int(a), int(b)) for a, b in spans]
        bad = [i for i, (seq, (a, b)) in enumerate(zip(seqs, spans)) if not 0 <= a <= b <= len(seq)]
        if len(spans) != len(seqs) or bad:
            raise InputError(f"spans: need one [a, b) with 0 <= a <= b <= len(seq) per sequence; got "
                             f"{len(spans)} spans for {len(seqs)} sequences" + (f", bad at {bad[:5]}." if bad else "."))
    scored = [_score_strand(model, seqs, spans, batch_size, progress)]
    if strands == "both":
        mirrored = None if spans is None else [(len(s) - b, len(s) - a) for s, (a, b) in zip(seqs, spans)]
        reverse = _score_strand(model, [reverse_complement(s) for s in seqs], mirrored, batch_size, progress)
        scored.append([scores.flip(0) for scores in reverse])
    return Likelihoods(tuple(scored))
