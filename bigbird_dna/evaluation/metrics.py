"""Classification metrics, by label kind: the one set of functions that scores the fine-tuned models
and their baselines (k-mer logistic regression, small CNN) on the same rows, from torchmetrics (exact
AUCs, no thresholds but the 0.5 of F1, MCC and accuracy).

- ``binary`` (one label, ``[N]``): :func:`binary_metrics`, AUROC, AUPRC (average precision), and F1,
  MCC and accuracy at 0.5;
- ``multiclass`` (one-hot ``[N, C]``, one class per row): :func:`multiclass_metrics`, accuracy
  (argmax), macro F1, MCC (Gorodkin's multiclass Matthews correlation; the binary MCC for two
  classes), one-vs-rest AUROC per class and their macro mean over the classes present;
- ``multilabel`` (0/1 ``[N, C]``): :func:`per_label_metrics`, AUROC and AUPRC of every label that has
  both positives and negatives.

A metric that is undefined (a class or label without positives, or without negatives) is ``nan`` and
left out of every mean and median. :func:`classification_metrics` gives the keys the baselines report;
:func:`output_metrics` those of a model, by its output kind (:mod:`bigbird_dna.model.outputs`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_auroc,
    binary_average_precision,
    binary_f1_score,
    binary_matthews_corrcoef,
    multiclass_accuracy,
    multiclass_auroc,
    multiclass_f1_score,
    multiclass_matthews_corrcoef,
    multilabel_auroc,
    multilabel_average_precision,
)

from bigbird_dna.errors import InputError

LABEL_KINDS = ("binary", "multiclass", "multilabel")
NAN = float("nan")


# a score is "above chance" when its AUROC exceeds 0.5 by this many chance standard errors
ABOVE_CHANCE_STANDARD_ERRORS = 3.0


def chance_standard_error(labels: np.ndarray) -> float:
    """The standard deviation of a random scorer's AUROC, ``sqrt((P + N + 1) / (12 P N))`` for
    ``P`` positives and ``N`` negatives (Mann-Whitney under the null), the largest over the label
    columns of ``labels [rows, C]`` (0/1); ``inf`` when a column lacks a class."""
    positives = labels.sum(0)
    negatives = len(labels) - positives
    if (positives == 0).any() or (negatives == 0).any():
        return float("inf")
    return float(np.sqrt((positives + negatives + 1) / (12 * positives * negatives)).max())


def above_chance_threshold(labels: np.ndarray) -> float:
    """The AUROC a score must exceed on ``labels [rows, C]`` to be above chance:
    ``0.5 + ABOVE_CHANCE_STANDARD_ERRORS * chance_standard_error(labels)``. At 1 or more (ten
    validation sequences give 1.07) no score can: such a split is too small to choose on."""
    return 0.5 + ABOVE_CHANCE_STANDARD_ERRORS * chance_standard_error(labels)


def check_label_kind(kind: str, num_labels: int) -> None:
    """Refuse an unknown kind, or a label count that does not fit it."""
    if kind not in LABEL_KINDS:
        raise InputError(f"label_kind={kind!r} is not one of {', '.join(LABEL_KINDS)}.")
    if (kind == "binary") != (num_labels == 1) or (kind == "multiclass" and num_labels < 2):
        raise InputError(f"label_kind={kind!r} does not fit {num_labels} label column(s): binary data has one "
                         "0/1 label, multiclass data one-hot rows of two or more classes.")


def binary_metrics(probs: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
    """``auroc``, ``auprc`` (nan with one class only), ``f1``, ``mcc``, ``accuracy`` (at 0.5) of
    probabilities ``[N]`` against 0/1 targets ``[N]``."""
    probs, targets = probs.float().cpu(), targets.long().cpu()
    metrics = {"f1": binary_f1_score(probs, targets).item(), "mcc": binary_matthews_corrcoef(probs, targets).item(),
               "accuracy": binary_accuracy(probs, targets).item()}
    if len(targets) == 0 or targets.min() == targets.max():
        return {**metrics, "auroc": NAN, "auprc": NAN}
    return {**metrics, "auroc": binary_auroc(probs, targets).item(),
            "auprc": binary_average_precision(probs, targets).item()}


def multiclass_metrics(probs: torch.Tensor, targets: torch.Tensor) -> dict[str, float | torch.Tensor]:
    """``accuracy`` (argmax), ``macro_f1``, ``mcc`` (multiclass Matthews correlation of the argmax),
    ``macro_auroc`` and ``per_class_auroc`` (``[C]``, nan for a class without rows, or with every row)
    of probabilities ``[N, C]`` against one-hot targets ``[N, C]``."""
    probs, targets = probs.float().cpu(), targets.cpu()
    num_classes = probs.shape[1]
    index = targets.argmax(dim=1)
    count = targets.sum(dim=0)
    present = (count > 0) & (count < len(targets))  # a class without rows, or with all of them: no AUROC
    with warnings.catch_warnings():  # torchmetrics warns of a class without sequences; it is nan below
        warnings.filterwarnings("ignore", message="No positive samples in targets")
        per_class = multiclass_auroc(probs, index, num_classes=num_classes, average=None)
    per_class = torch.where(present, per_class, torch.tensor(NAN))
    macro = per_class[present].mean().item() if bool(present.any()) else NAN
    return {"accuracy": multiclass_accuracy(probs, index, num_classes=num_classes, average="micro").item(),
            "macro_f1": multiclass_f1_score(probs, index, num_classes=num_classes, average="macro").item(),
            "mcc": multiclass_matthews_corrcoef(probs, index, num_classes=num_classes).item(),
            "macro_auroc": macro, "per_class_auroc": per_class}


@dataclass
class LabelMetrics:
    """Per-label results, ``[C]`` each; ``auroc``/``auprc`` are NaN for excluded labels."""

    auroc: np.ndarray
    auprc: np.ndarray
    positives: np.ndarray
    negatives: np.ndarray

    @property
    def scored(self) -> np.ndarray:
        """``[C]`` bool: labels with both classes present, which have an AUC."""
        return (self.positives > 0) & (self.negatives > 0)


def per_label_metrics(probs: torch.Tensor, targets: torch.Tensor) -> LabelMetrics:
    """AUROC and AUPRC (average precision) of every label of probabilities ``[N, C]`` against 0/1
    targets ``[N, C]``."""
    probs, targets = probs.float().cpu(), targets.long().cpu()
    positives = targets.sum(0).numpy()
    negatives = len(targets) - positives
    metrics = LabelMetrics(np.full(targets.shape[1], np.nan), np.full(targets.shape[1], np.nan), positives, negatives)
    scored = np.flatnonzero(metrics.scored)
    p, t = probs[:, scored], targets[:, scored]
    if len(scored) == 1:  # the multilabel functions need two labels or more
        metrics.auroc[scored] = binary_auroc(p[:, 0], t[:, 0]).item()
        metrics.auprc[scored] = binary_average_precision(p[:, 0], t[:, 0]).item()
    elif len(scored) > 1:
        metrics.auroc[scored] = multilabel_auroc(p, t, num_labels=len(scored), average="none").numpy()
        metrics.auprc[scored] = multilabel_average_precision(p, t, num_labels=len(scored), average="none").numpy()
    return metrics


def median_of(values: np.ndarray) -> float:
    """The median of the values that are not NaN (NaN when none is)."""
    values = values[~np.isnan(values)]
    return float(np.median(values)) if len(values) else NAN


def classification_metrics(probs: torch.Tensor, labels: torch.Tensor, kind: str) -> dict[str, float]:
    """The baselines' metrics of probabilities ``[N, C]`` against 0/1 labels ``[N, C]``.

    ``binary``: those of :func:`binary_metrics` (``auroc``, ``auprc``, ``f1``, ``mcc``,
    ``accuracy``), as a sigmoid model reports them; ``multiclass``: ``auroc`` (the macro AUROC, a
    softmax model's ``macro_auroc``), ``accuracy``, ``macro_f1``, ``mcc`` and ``auroc_class<i>``;
    ``multilabel``: ``auroc`` (mean over scored labels), ``auroc_median``, ``labels_scored``.
    """
    if kind == "binary":
        return binary_metrics(probs[:, 0], labels[:, 0])
    if kind == "multiclass":
        multi = multiclass_metrics(probs, labels)
        per_class = multi.pop("per_class_auroc")
        return {"auroc": multi.pop("macro_auroc"), **multi,
                **{f"auroc_class{i}": float(v) for i, v in enumerate(per_class.tolist())}}
    per_label = per_label_metrics(probs, labels)
    scored = per_label.auroc[per_label.scored]
    return {"auroc": float(scored.mean()) if len(scored) else math.nan, "auroc_median": median_of(per_label.auroc),
            "labels_scored": float(len(scored))}


def output_metrics(kind: str, probs: torch.Tensor, targets: torch.Tensor) -> dict[str, float]:
    """A model's metrics for one evaluation of probabilities ``[N, C]`` against 0/1 targets
    ``[N, C]``, by its output kind: ``sigmoid`` with one label, :func:`binary_metrics`; with several,
    the mean and median AUROC and AUPRC over the scored labels and ``labels_scored``; ``softmax``,
    :func:`multiclass_metrics` with ``auroc_class<i>`` per class."""
    if kind == "sigmoid" and probs.shape[1] == 1:
        return binary_metrics(probs[:, 0], targets[:, 0])
    if kind == "sigmoid":
        per_label = per_label_metrics(probs, targets)
        scored = per_label.scored
        return {"auroc": float(per_label.auroc[scored].mean()) if scored.any() else NAN,
                "auroc_median": median_of(per_label.auroc), "auprc_median": median_of(per_label.auprc),
                "labels_scored": float(scored.sum())}
    if kind == "softmax":
        metrics = multiclass_metrics(probs, targets)
        per_class = metrics.pop("per_class_auroc")
        return {**metrics, **{f"auroc_class{i}": float(v) for i, v in enumerate(per_class.tolist())}}
    raise InputError(f"no metrics for a {kind!r} output; add them to bigbird_dna/evaluation/metrics.py.")

