"""Chromatin-profile prediction: DeepSEA's 919 binary features from the [CLS] vector
(``python -m bigbird_dna.train task=chromatin data=deepsea data.dir=...``).

A :class:`~bigbird_dna.tasks.classification.SequenceClassificationTask` with ``num_labels`` outputs
(919) and BCE with the positives up-weighted (``pos_weight`` 8, the paper's Tab 21). At evaluation
the predictions are put back in file order, forward/reverse-complement pairs are averaged
(DeepSEA's convention), and per-label AUROC/AUPRC are summarised as the median per label group.

Logged metrics (``val/`` and ``test/``): ``loss``, ``auroc_median``, ``auprc_median`` (over every
scored label), ``auroc_<group>``/``auprc_<group>`` (e.g. ``auroc_dhs``, ``auroc_tf``,
``auroc_hm``), ``labels_scored``, ``labels_no_positives``, ``labels_no_negatives``.

Written to the run directory after every evaluation (atomically, by rank 0):
``chromatin_<split>_labels.tsv`` (one row per label) and ``chromatin_<split>_auroc.png``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from bigbird_dna.data.chromatin.datamodule import ChromatinDataModule
from bigbird_dna.evaluation.metrics import per_label_metrics
from bigbird_dna.evaluation.summary import baseline_rows
from bigbird_dna.model.outputs import SIGMOID, ModelOutput, default_names, read_names
from bigbird_dna.tasks.base import checkpoint_rows, summary_table
from bigbird_dna.tasks.chromatin_report import (
    average_strands,
    parse_groups,
    plot_report,
    summarise,
    write_label_tsv,
)
from bigbird_dna.tasks.classification import SequenceClassificationTask


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a chromatin-profile run."""
    groups = [k.removeprefix("val/auroc_") for k in summary
              if k.startswith("val/auroc_") and k != "val/auroc_median"]
    rows = [
        ("steps", f"{summary['global_step']}"),
        ("val loss (weighted BCE)", f"{summary['val/loss']:.4f}"),
        ("median AUROC / AUPRC", f"{summary['val/auroc_median']:.4f} / {summary['val/auprc_median']:.4f}"),
        *((f"  {g.upper()} AUROC / AUPRC", f"{summary[f'val/auroc_{g}']:.4f} / {summary[f'val/auprc_{g}']:.4f}")
          for g in groups),
        ("labels scored", f"{summary['val/labels_scored']:.0f}  (excluded: {summary['val/labels_no_positives']:.0f} "
                          f"without positives, {summary['val/labels_no_negatives']:.0f} without negatives)"),
        *baseline_rows(summary, metric="auroc_median", label="median AUROC"),
        ("per-label results", str(Path(summary["run_dir"]) / "chromatin_val_labels.tsv")),
        ("plot", str(Path(summary["run_dir"]) / "chromatin_val_auroc.png")),
        *checkpoint_rows(summary),
        ("export", summary["export"]),
        ("time", f"{summary['seconds']:.0f} s"),
    ]
    return summary_table("Chromatin-profile training finished", rows)


class ChromatinTask(SequenceClassificationTask):
    """919-way (``num_labels``) chromatin-profile classifier with group-median AUROC/AUPRC.

    Args:
        groups: ``[[name, start, end], ...]`` label ranges summarised by their median (DeepSEA:
            DHS ``[0, 125)``, TF ``[125, 815)``, HM ``[815, 919)``); ``None`` = one group.
        label_names: the labels' names: a list, or a file with one name per line
            (``task.label_names``); ``None`` takes ``data_label_names``. Saved in the export.
        data_label_names: names the data itself carries (an intervals header), or ``None``.
        report_dir: where the per-label TSV and the PNG go (``None``: not written).
        rc_pairs: ``{"val"|"test": [P, 2]}`` file rows (forward, reverse complement) whose
            predictions are averaged at evaluation (from the data; not a hyperparameter).
        **kwargs: :class:`SequenceClassificationTask` arguments (``pos_weight`` defaults to 8).
    """

    task_name = "chromatin"
    format_summary = staticmethod(format_summary)
    data_class = ChromatinDataModule

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], num_labels: int = 919,
                 pos_weight: float | None = 8.0, groups: list | dict | None = None,
                 label_names: str | list[str] | None = None, data_label_names: list[str] | None = None,
                 report_dir: str | None = None, rc_pairs: dict[str, np.ndarray] | None = None, **kwargs: Any):
        if isinstance(label_names, str):
            label_names = read_names(label_names, num_labels)
        label_names = list(label_names) if label_names is not None else data_label_names
        names = tuple(label_names) if label_names is not None and len(label_names) == num_labels else \
            default_names("label", num_labels)
        super().__init__(model, optim, num_labels=num_labels, pos_weight=pos_weight,
                         output=ModelOutput(SIGMOID, names), **kwargs)
        self.groups = parse_groups(groups, num_labels)
        self.rc_pairs: dict[str, np.ndarray] = dict(rc_pairs or {})
        self.report_dir: Path | None = Path(report_dir) if report_dir else None
        self.label_names: list[str] | None = label_names
        self._indices: dict[str, list[torch.Tensor]] = {"val": [], "test": []}

    def _split(self) -> str:
        return "test" if self.trainer is not None and self.trainer.testing else "val"

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._indices["val"].append(batch["index"].cpu())
        super().validation_step(batch, batch_idx)

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._indices["test"].append(batch["index"].cpu())
        super().test_step(batch, batch_idx)

    def compute_metrics(self, probs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Strand-averaged per-label AUROC/AUPRC of the epoch, summarised per group; writes the report."""
        split = self._split()
        indices = torch.cat(self._indices[split])
        self._indices[split].clear()
        if self.trainer is not None and self.trainer.world_size > 1:  # same order as the base's gather
            indices = self.all_gather(indices).reshape(-1).cpu()
        probs, targets = average_strands(probs, targets, indices, self.rc_pairs.get(split))
        metrics = per_label_metrics(probs, targets)
        summary = summarise(metrics, self.groups)
        sanity = self.trainer is not None and self.trainer.sanity_checking
        if self.report_dir is not None and not sanity and (self.trainer is None or self.trainer.is_global_zero):
            write_label_tsv(self.report_dir / f"chromatin_{split}_labels.tsv", metrics, self.groups, self.label_names)
            plot_report(self.report_dir / f"chromatin_{split}_auroc.png", metrics, probs, targets, self.groups,
                        title=f"{split}: {len(probs)} windows, {int(summary['labels_scored'])} scored labels")
        return {name: torch.tensor(value) for name, value in summary.items()}
