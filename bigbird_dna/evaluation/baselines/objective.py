"""What the baselines fit, by label kind: probabilities from logits and the training loss.

``multiclass`` (one-hot labels ``[N, C]``): a softmax and cross-entropy; ``binary`` and
``multilabel`` (0/1 labels ``[N, C]``): independent sigmoids and BCE summed over the labels.
"""

from __future__ import annotations

import torch


def probabilities(logits: torch.Tensor, kind: str) -> torch.Tensor:
    """Logits ``[N, C]`` -> probabilities: softmax over classes for multiclass, else sigmoids."""
    return logits.softmax(-1) if kind == "multiclass" else logits.sigmoid()


def loss_of(logits: torch.Tensor, labels: torch.Tensor, kind: str) -> torch.Tensor:
    """Mean training loss: cross-entropy over classes (multiclass), else BCE summed over labels."""
    if kind == "multiclass":
        return torch.nn.functional.cross_entropy(logits, labels.argmax(1))
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    return bce.sum(1).mean()
