"""Why a classifier scores a sequence: per-base attributions of one output.

Three methods (:data:`METHODS`), all for any classifier export and any tokenizer:

- ``"ism"``: in-silico saturation mutagenesis (:mod:`~bigbird_dna.attribution.ism`), the exact
  effect of every single-base change; ``3 L`` forward passes per sequence and strand, so ``span``
  limits it to ``[a, b)``;
- ``"gradient_x_input"`` and ``"integrated_gradients"`` at the token embedding, spread back onto
  bases (:mod:`~bigbird_dna.attribution.gradients`); need the ``explain`` extra (captum).

What is explained is one output column (:mod:`~bigbird_dna.attribution.targets`): a class or label
name or index, as a logit (default) or a probability.

**Results** are float32 on the CPU, one row per sequence, positions 0-based along the sequence as
given; sequences of different lengths are NaN-padded to the longest:

- per base, ``[N, L]``: gradient methods' scores (their sum is the sum over tokens); ISM's
  ``-mean_c delta[i, c]``, how much the observed base raises the target over the mean letter;
- per letter, ``[N, L, 4]`` (``ACGT`` columns): gradient methods' hypothetical contributions, ISM's
  raw deltas ``f(mutant) - f(x)`` (0 at the observed letter).

**Precision.** Attributions are computed in fp32, also for a model loaded with bf16 on a GPU: bf16
rounding is larger than many single-base effects.

**Strands.** ``"+"`` explains each sequence as given; ``"both"`` also explains its reverse
complement, mirrors that onto the forward bases (:func:`~bigbird_dna.attribution.bases.mirror`)
and averages, which explains the strand-averaged score ``predict`` reports.
"""

from __future__ import annotations

from typing import Callable, Iterable, Protocol, Sequence

import torch

from bigbird_dna.attribution.bases import mirror, padded
from bigbird_dna.attribution.gradients import GRADIENT_METHODS, gradient_attributions
from bigbird_dna.attribution.ism import ism_deltas, ism_per_base
from bigbird_dna.attribution.targets import SCALES, Target, resolve_target
from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.inference.request import STRAND_CHOICES
from bigbird_dna.tokenizer import DNATokenizer

METHODS = ("ism", *GRADIENT_METHODS)

__all__ = ["METHODS", "SCALES", "Target", "attribute", "resolve_target"]


class ExplainableModel(Protocol):
    """What attribution reads from a model: a :class:`~bigbird_dna.pretrained.BigBirdDNA` of a
    classifier export. ``forward(scale)`` is the batched scorer ``predict`` uses, returning logits
    or probabilities ``[B, C]``; ``encode`` gives ``[CLS] tokens [SEP]`` and refuses long sequences."""

    tokenizer: DNATokenizer
    module: torch.nn.Module
    device: torch.device
    precision: str

    def forward(self, scale: str) -> Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor]: ...

    def encode(self, seqs: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]: ...


def check_method(method: str, steps: int | None, batch_size: int) -> None:
    """Refuse an unknown method or a non-positive step count or batch size."""
    if method not in METHODS:
        raise InputError(f"method={method!r}: use one of {', '.join(METHODS)}.")
    if (steps is not None and steps < 1) or batch_size < 1:
        raise InputError(f"steps and batch_size must be positive, got {steps} and {batch_size}.")


def attribute(model: ExplainableModel, seqs: Iterable[str], method: str = "integrated_gradients",
              target: str | int | None = None, output: str = "logit", per_letter: bool = False,
              strands: str = "+", span: tuple[int, int] | None = None, steps: int | None = None,
              batch_size: int = 16, progress: Callable[[int], None] = lambda n: None) -> torch.Tensor:
    """Attributions of ``seqs`` (module docstring): ``[N, L]``, or ``[N, L, 4]`` with ``per_letter``.

    Args:
        model: a classifier (:class:`ExplainableModel`).
        seqs: DNA strings (checked by the caller), each within the model's context.
        method: one of :data:`METHODS`.
        target: the output explained (:func:`~bigbird_dna.attribution.targets.resolve_target`).
        output: ``"logit"`` or ``"probability"``.
        strands: ``"+"`` or ``"both"``.
        span: ISM only: ``(a, b)``, 0-based half-open, the same for every sequence; NaN outside.
        steps: integrated gradients' path points; ``None``: 50, doubled per sequence until its
            scores sum to ``f(x) - f(baseline)`` within 1% (at most 800).
        batch_size: sequences (gradients: path points) or ISM mutants per forward pass.
        progress: called with the number of sequences (ISM: windows) done.

    Raises:
        InputError: an unknown method, target, scale or strand choice, a span outside a sequence
            or given to a gradient method, or a sequence longer than the model's context.
    """
    seqs = list(seqs)
    check_method(method, steps, batch_size)
    resolved = resolve_target(model.module.output, target, output)
    if strands not in ("+", "both"):
        raise InputError(f"strands={strands!r}: use + or both.")
    if method == "ism":
        pairs = [_ism(model, seq, resolved, span, STRAND_CHOICES[strands], batch_size, progress) for seq in seqs]
    else:
        if span is not None:
            raise InputError("span limits ISM only; gradient methods explain every base in one pass.")
        pairs = gradient_attributions(model.module, model.tokenizer, model.encode, seqs, resolved, method, steps,
                                      batch_size, progress)
        if strands == "both":
            reverse = gradient_attributions(model.module, model.tokenizer, model.encode,
                                            [reverse_complement(s) for s in seqs], resolved, method, steps,
                                            batch_size, progress)
            pairs = [((base + mirror(rbase)) / 2, (letters + mirror(rletters)) / 2)
                     for (base, letters), (rbase, rletters) in zip(pairs, reverse)]
    return padded([letters if per_letter else base for base, letters in pairs])


def _ism(model: ExplainableModel, seq: str, target: Target, span: tuple[int, int] | None,
         strands: tuple[str, ...], batch_size: int, progress) -> tuple[torch.Tensor, torch.Tensor]:
    """``(per_base [L], deltas [L, 4])`` of one sequence (:mod:`~bigbird_dna.attribution.ism`)."""
    a, b = (0, len(seq)) if span is None else (int(span[0]), int(span[1]))
    if not 0 <= a < b <= len(seq):
        raise InputError(f"span [{a}, {b}) is not inside a sequence of {len(seq)} bp (0-based, half-open).")
    # fp32 whatever the model's precision: bf16 rounding (~0.4%) is larger than many one-base effects
    deltas = ism_deltas(model.forward(target.scale), model.tokenizer, model.module.config.max_positions,
                        model.device, "fp32", seq, target, strands, (a, b), batch_size, progress)
    return ism_per_base(deltas), deltas
