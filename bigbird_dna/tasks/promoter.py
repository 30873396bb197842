"""Promoter prediction: one sigmoid output on the [CLS] vector, fine-tuned from an MLM export or
trained from scratch (``python -m bigbird_dna.train task=promoter data=promoter_epdnew ...``).

Logged metrics: ``train/loss``, ``val/loss`` and, at the 0.5 threshold where one is needed,
``val/f1``, ``val/auroc``, ``val/auprc`` (average precision), ``val/mcc`` and ``val/accuracy``,
from :func:`bigbird_dna.evaluation.metrics.binary_metrics` (the baselines' metrics).
"""

from __future__ import annotations

from typing import Any

from bigbird_dna.data.annotation.datamodule import AnnotatedTaskData
from bigbird_dna.data.promoter.datamodule import EpdnewPromoterData, LabelledPromoterData
from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.summary import baseline_rows, composition_rows
from bigbird_dna.model.outputs import SIGMOID, ModelOutput
from bigbird_dna.tasks.base import checkpoint_rows, summary_table
from bigbird_dna.tasks.classification import SequenceClassificationTask


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a promoter fine-tuning run."""
    rows = [
        ("steps", f"{summary['global_step']}"),
        ("val loss (BCE)", f"{summary['val/loss']:.4f}"),
        ("val F1 / MCC", f"{summary['val/f1']:.4f} / {summary['val/mcc']:.4f}  (threshold 0.5)"),
        ("val AUROC / AUPRC", f"{summary['val/auroc']:.4f} / {summary['val/auprc']:.4f}"),
        *([("test AUROC / AUPRC", f"{summary['test/auroc']:.4f} / {summary['test/auprc']:.4f}")]
          if "test/auroc" in summary else []),
        *baseline_rows(summary),
        *composition_rows(summary),
        *checkpoint_rows(summary),
        ("export", summary["export"]),
        ("time", f"{summary['seconds']:.0f} s"),
    ]
    return summary_table("Promoter fine-tuning finished", rows)


class PromoterTask(SequenceClassificationTask):
    """:class:`SequenceClassificationTask` with one label and the promoter metrics."""

    task_name = "promoter"
    format_summary = staticmethod(format_summary)
    data_class = (EpdnewPromoterData, LabelledPromoterData, AnnotatedTaskData)

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], num_labels: int = 1, **kwargs: Any):
        if num_labels != 1:
            raise InputError(f"a promoter model has one output, not task.num_labels={num_labels}.")
        super().__init__(model, optim, num_labels=1, output=ModelOutput(SIGMOID, ("promoter",)), **kwargs)
