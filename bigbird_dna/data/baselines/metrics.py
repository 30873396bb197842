"""The baselines' metrics, by label kind, from torchmetrics (exact, no thresholds).

- ``binary`` (labels ``[N, 1]``): ``auroc`` and ``auprc`` (average precision);
- ``multiclass`` (one-hot labels ``[N, C]``): ``auroc`` = macro one-vs-rest AUROC over the classes
  that have both positives and negatives in the set, and ``auroc_class<i>`` per class;
- ``multilabel`` (0/1 labels ``[N, C]``): ``auroc`` = mean AUROC over the labels with both classes
  in the set, ``auroc_median`` (the chromatin task's summary statistic) and ``labels_scored``.

A metric that is undefined (one class only) is ``nan``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torchmetrics.functional.classification import (
    binary_auroc,
    binary_average_precision,
    multiclass_auroc,
    multilabel_auroc,
)

from bigbird_dna.errors import InputError

LABEL_KINDS = ("binary", "multiclass", "multilabel")


def check_label_kind(kind: str, num_labels: int) -> None:
    """Refuse an unknown kind, or a label count that does not fit it."""
    if kind not in LABEL_KINDS:
        raise InputError(f"label_kind={kind!r} is not one of {', '.join(LABEL_KINDS)}.")
    if (kind == "binary") != (num_labels == 1) or (kind == "multiclass" and num_labels < 2):
        raise InputError(f"label_kind={kind!r} does not fit {num_labels} label column(s): binary data has one "
                         "0/1 label, multiclass data one-hot rows of two or more classes.")


def classification_metrics(probs: torch.Tensor, labels: torch.Tensor, kind: str) -> dict[str, float]:
    """Metrics of predicted probabilities ``probs [N, C]`` against 0/1 ``labels [N, C]``."""
    probs, labels = probs.float().cpu(), labels.cpu()
    positives = labels.sum(0)
    both = (positives > 0) & (positives < len(labels))  # [C]
    if kind == "binary":
        if not both[0]:
            return {"auroc": math.nan, "auprc": math.nan}
        target = labels[:, 0].long()
        return {"auroc": binary_auroc(probs[:, 0], target).item(),
                "auprc": binary_average_precision(probs[:, 0], target).item()}
    if kind == "multiclass":
        per_class = multiclass_auroc(probs, labels.argmax(1), num_classes=labels.shape[1], average="none")
        per_class = torch.where(both, per_class, torch.full_like(per_class, math.nan))
        scored = per_class[both]
        return {"auroc": scored.mean().item() if len(scored) else math.nan,
                **{f"auroc_class{i}": float(v) for i, v in enumerate(per_class.tolist())}}
    scored = torch.nonzero(both).flatten()
    if len(scored) == 0:
        return {"auroc": math.nan, "auroc_median": math.nan, "labels_scored": 0.0}
    p, t = probs[:, scored], labels[:, scored].long()
    if len(scored) == 1:
        values = binary_auroc(p[:, 0], t[:, 0]).reshape(1)
    else:
        values = multilabel_auroc(p, t, num_labels=len(scored), average="none")
    return {"auroc": values.mean().item(), "auroc_median": float(np.median(values.numpy())),
            "labels_scored": float(len(scored))}


def probabilities(logits: torch.Tensor, kind: str) -> torch.Tensor:
    """Logits ``[N, C]`` -> probabilities: softmax over classes for multiclass, else sigmoids."""
    return logits.softmax(-1) if kind == "multiclass" else logits.sigmoid()


def loss_of(logits: torch.Tensor, labels: torch.Tensor, kind: str) -> torch.Tensor:
    """Mean training loss: cross-entropy over classes (multiclass), else BCE summed over labels."""
    if kind == "multiclass":
        return torch.nn.functional.cross_entropy(logits, labels.argmax(1))
    bce = torch.nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    return bce.sum(1).mean()
