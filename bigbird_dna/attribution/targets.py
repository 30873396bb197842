"""What an attribution explains: one output column of a classifier, as a logit or a probability.

**Target.** ``None`` for a one-output model (promoter); otherwise an output's name (a ``classify``
model's class, a chromatin label) or its 0-based column index. A multi-output model needs one.

**Scale.** ``"logit"`` (default): the head's raw output for that column, which gradients and ISM
deltas read without saturating; ``"probability"``: what ``predict`` reports for it (sigmoid, or the
softmax over the classes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.outputs import ModelOutput

SCALES = ("logit", "probability")


@dataclass(frozen=True)
class Target:
    """Column ``column`` (named ``name``) of the head, read on ``scale``."""

    column: int
    name: str
    scale: str

    def of(self, logits: torch.Tensor, output: ModelOutput) -> torch.Tensor:
        """``[B]``: this target's value in logits ``[B, C]``."""
        values = logits if self.scale == "logit" else output.kind.probabilities(logits)
        return values[:, self.column]


def resolve_target(output: ModelOutput, target: str | int | None, scale: str = "logit") -> Target:
    """The :class:`Target` that ``target`` names in ``output``.

    Raises:
        InputError: a model without a classification head, an unknown scale, no target on a
            multi-output model, or a name or index the model lacks (the error lists what it has).
    """
    if not output.kind.classifies:
        raise InputError(f"this is a '{output.kind.name}' model without a classification head: nothing to "
                         "explain. For per-base likelihoods of an MLM use score (python -m bigbird_dna.score).")
    if scale not in SCALES:
        raise InputError(f"output={scale!r}: use one of {', '.join(SCALES)}.")
    names = list(output.names)
    if target is None:
        if len(names) > 1:
            raise InputError(f"this model has {len(names)} outputs; choose a target: "
                             f"{_listing(names)} (a name or a 0-based index).")
        return Target(0, names[0], scale)
    if isinstance(target, str) and target in names:
        return Target(names.index(target), target, scale)
    index = _as_index(target)
    if index is not None and 0 <= index < len(names):
        return Target(index, names[index], scale)
    raise InputError(f"target {target!r} is not an output of this model; it has {_listing(names)} "
                     f"(a name, or a 0-based index below {len(names)}).")


def _as_index(target: str | int) -> int | None:
    if isinstance(target, int):
        return target
    return int(target) if target.strip().lstrip("-").isdigit() else None


def _listing(names: list[str]) -> str:
    shown = ", ".join(names[:8])
    return shown + (f", ... ({len(names)} in all)" if len(names) > 8 else "")


def target_function(module: torch.nn.Module, target: Target) -> Callable[[torch.Tensor], torch.Tensor]:
    """``input_ids [B, T]`` (no padding) -> the target's value ``[B]`` (float32), with autograd."""

    def value(input_ids: torch.Tensor) -> torch.Tensor:
        return target.of(module.logits(input_ids, None).float(), module.output)

    return value
