"""A classifier's network stacked on a composition path fitted first (``task.head.composition_fit=first``).

:class:`CompositionStacking` is mixed into
:class:`~bigbird_dna.tasks.classification.SequenceClassificationTask`. When training starts it fits
the head's path (:mod:`~bigbird_dna.tasks.composition_fit`), unless a checkpoint brought a fit,
and keeps two things of the fit for the rest of the run:

- the small CNN that judged it (``judge_cnn``), which the run's summary scores rather than
  training another;
- the kept fit's own validation AUROC (``composition_val_auroc``, also in checkpoints, so a
  resumed run has it), which the summary sets the network against
  (:func:`~bigbird_dna.evaluation.summary.composition_rows`): a network that learnt nothing on top
  of the path scores exactly the path's AUROC (docs/metrics.md, "Silent networks").
"""

from __future__ import annotations

from typing import Any

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.baselines.cnn import CNNResult
from bigbird_dna.model.composition import FittedKmerComposition
from bigbird_dna.tasks.backbone import report
from bigbird_dna.tasks.composition_fit import JUDGES, describe_fit, fit_composition_path


class CompositionStacking:
    """The fit-first hooks of a classification task; the host has ``head``, ``config``, ``device``
    and ``trainer`` (a LightningModule with a :class:`~bigbird_dna.model.heads.ClassificationHead`)."""

    def init_stacking(self, composition_judge: str) -> None:
        """Check ``task.composition_judge`` (one of :data:`JUDGES`) and start with no fit recorded."""
        if composition_judge not in JUDGES:
            raise InputError(f"task.composition_judge={composition_judge!r} is not one of {JUDGES}.")
        self.composition_judge = composition_judge
        self.judge_cnn: CNNResult | None = None
        self.composition_val_auroc: float | None = None

    def on_fit_start(self) -> None:
        """With ``task.head.composition_fit=first``, fit the composition path on the training split
        unless a checkpoint already brought a fit."""
        path = self.head.composition
        if isinstance(path, FittedKmerComposition) and not bool(path.fitted):
            fit = fit_composition_path(path, self.trainer.datamodule, self.config.max_input_tokens - 2,
                                       judge=self.composition_judge, judge_device=self.device)
            self.judge_cnn = fit.pop("cnn", None)
            if fit.get("kept") and fit["chosen_on"] == "val":
                self.composition_val_auroc = fit["val_auroc"]
            report(describe_fit(fit))

    def summary_entries(self) -> dict[str, Any]:
        """``composition/val_auroc``: the kept path's own validation AUROC, when it was chosen on the
        validation split (a cross-validated choice is not comparable with the model's)."""
        return {} if self.composition_val_auroc is None else {"composition/val_auroc": self.composition_val_auroc}

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_save_checkpoint(checkpoint)
        checkpoint["composition_val_auroc"] = self.composition_val_auroc

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        super().on_load_checkpoint(checkpoint)
        self.composition_val_auroc = checkpoint.get("composition_val_auroc", self.composition_val_auroc)
