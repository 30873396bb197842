"""General sequence classification into 2..N named classes: softmax over the classification head
(``python -m bigbird_dna.train task=classify data=classify data.train='{a: a.fa, b: b.fa, c: c.fa}'``).

A :class:`~bigbird_dna.tasks.classification.SequenceClassificationTask` with ``C`` outputs (one per
class, in the data's sorted class order), trained with cross-entropy, optionally class-weighted.
Two classes work the same way (softmax over 2).

Logged metrics (``val/`` and ``test/``), from :func:`bigbird_dna.evaluation.metrics.multiclass_metrics`:
``loss`` (cross-entropy), ``accuracy`` (argmax), ``macro_f1``, ``macro_auroc`` (one-vs-rest AUROC
averaged over classes) and ``auroc_<class>`` per class (the class name with characters other than
letters, digits, ``_``, ``.``, ``-`` replaced by ``_``). A class without any sequence in the evaluated
set (or with all of them) has AUROC ``nan`` and is left out of the macro average.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import torch

from bigbird_dna.data.classes.datamodule import SequenceClassData
from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.metrics import multiclass_metrics
from bigbird_dna.evaluation.summary import baseline_rows, composition_rows
from bigbird_dna.model.outputs import SOFTMAX, ModelOutput
from bigbird_dna.tasks.base import checkpoint_rows, summary_table
from bigbird_dna.tasks.classification import SequenceClassificationTask


def metric_keys(class_names: list[str]) -> list[str]:
    """Per-class metric suffixes: the names made safe for metric keys, or indices if that collides."""
    keys = [re.sub(r"[^A-Za-z0-9_.-]", "_", name) for name in class_names]
    return keys if len(set(keys)) == len(keys) else [str(j) for j in range(len(class_names))]


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a classification run: overall metrics, then AUROC per class."""
    rows = [("steps", f"{summary['global_step']}"),
            ("val loss (cross-entropy)", f"{summary['val/loss']:.4f}")]
    for split in ("val", "test"):
        if f"{split}/macro_auroc" in summary:
            rows += [(f"{split} accuracy / macro F1", f"{summary[f'{split}/accuracy']:.4f} / "
                                                      f"{summary[f'{split}/macro_f1']:.4f}"),
                     (f"{split} macro AUROC", f"{summary[f'{split}/macro_auroc']:.4f}")]
    rows += [(f"  AUROC {key.removeprefix('val/auroc_')}", f"{value:.4f}")
             for key, value in summary.items() if key.startswith("val/auroc_")]
    rows += baseline_rows(summary, "auroc", "macro AUROC", model_metric="macro_auroc")
    rows += composition_rows(summary, "macro AUROC", model_metric="macro_auroc")
    rows += [*checkpoint_rows(summary), ("export", summary["export"]),
             ("time", f"{summary['seconds']:.0f} s")]
    return summary_table("Sequence classification finished", rows)


def resolve_class_weights(weights: str | list | Mapping | None, class_names: list[str],
                          class_counts: list[int] | None) -> torch.Tensor | None:
    """Cross-entropy weights ``[C]`` from ``task.class_weights``.

    Args:
        weights: ``None`` (all 1), ``"balanced"`` (``N / (C * count)``, needs ``class_counts``), a
            list of ``C`` positive floats in class order, or ``{class_name: weight}`` (missing = 1).
        class_names: the classes, in output order.
        class_counts: training sequences per class, in output order (from the data).
    """
    if weights is None:
        return None
    if weights == "balanced":
        if not class_counts or len(class_counts) != len(class_names) or min(class_counts) < 1:
            raise InputError("task.class_weights=balanced needs the training sequences per class, which the data "
                             "gives (data=classify); give a list of weights instead.")
        counts = torch.tensor(class_counts, dtype=torch.float32)
        return counts.sum() / (len(counts) * counts)
    if isinstance(weights, Mapping):
        unknown = sorted(set(map(str, weights)) - set(class_names))
        if unknown:
            raise InputError(f"task.class_weights names class(es) {unknown} that the data does not have "
                             f"(classes: {class_names}).")
        weights = [float({str(k): v for k, v in weights.items()}.get(name, 1.0)) for name in class_names]
    if isinstance(weights, str) or len(weights) != len(class_names) or min(map(float, weights)) <= 0:
        raise InputError(f"task.class_weights={weights!r}: give null, balanced, {len(class_names)} positive numbers "
                         f"(in the order {class_names}) or {{class_name: weight}}.")
    return torch.tensor([float(w) for w in weights], dtype=torch.float32)


class ClassifyTask(SequenceClassificationTask):
    """Softmax classifier over ``C >= 2`` named classes, cross-entropy loss.

    Args:
        model: :class:`~bigbird_dna.model.config.EncoderConfig` as a plain dict.
        optim: the ``optim`` config group as a plain dict.
        class_names: the classes in output order (from the data: ``SequenceClassData.task_inputs``);
            saved in checkpoints and the export.
        num_labels: number of classes; only needed without ``class_names`` (names become ``class_<j>``).
        class_counts: training sequences per class, for ``class_weights="balanced"`` (from the data).
        class_weights: see :func:`resolve_class_weights`.
        **kwargs: :class:`SequenceClassificationTask` arguments (``head``, ``backbone``, ...);
            ``pos_weight`` is a BCE setting and is refused.
    """

    task_name = "classify"
    format_summary = staticmethod(format_summary)
    data_class = SequenceClassData

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], class_names: list[str] | None = None,
                 num_labels: int | None = None, class_counts: list[int] | None = None,
                 class_weights: str | list | dict | None = None, **kwargs: Any):
        if kwargs.get("pos_weight") is not None:
            raise InputError("task.pos_weight is a BCE setting; task=classify uses cross-entropy: set "
                             "task.class_weights instead.")
        kwargs.pop("pos_weight", None)
        if class_names is None:
            if num_labels is None:
                raise InputError("task=classify takes its classes from the data: pair it with data=classify.")
            class_names = [f"class_{j}" for j in range(num_labels)]
        class_names = [str(name) for name in class_names]
        if num_labels is not None and num_labels != len(class_names):
            raise InputError(f"task.num_labels={num_labels} but the data has {len(class_names)} classes "
                             f"({class_names}); leave task.num_labels unset.")
        if len(class_names) < 2:
            raise InputError(f"task=classify needs at least 2 classes, not {class_names}.")
        num_labels = len(class_names)
        super().__init__(model, optim, num_labels=num_labels, output=ModelOutput(SOFTMAX, tuple(class_names)),
                         **kwargs)
        self.class_names = class_names
        self.loss_weight = resolve_class_weights(class_weights, class_names, class_counts)  # [C] or None

    def compute_metrics(self, probs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Accuracy, macro F1, macro and per-class one-vs-rest AUROC of ``probs``/one-hot ``targets [N, C]``
        (:func:`~bigbird_dna.evaluation.metrics.multiclass_metrics`, as the baselines are scored)."""
        metrics = multiclass_metrics(probs, targets)
        per_class = metrics.pop("per_class_auroc")
        metrics.update({f"auroc_{key}": value for key, value in zip(metric_keys(self.class_names), per_class)})
        return {name: torch.as_tensor(value) for name, value in metrics.items()}
