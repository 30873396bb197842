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

**The network's own read-out** (``task.network_readout``, a weight; 0: none). Stacked on a kept
path, the network is trained on what the path leaves: a weak signal, against which the encoder's
random features are noise. In its first epoch every run of the labelled defaults writes a vector
that is the same at every position into its residual stream, so the pooled vector becomes nearly
the same for every sequence; most runs grow their content back, about one promoter run in ten
does not, and its network stays silent. A second linear read-out of the pooled vector, trained on
the labels alone (without the path) beside the stacked head, gives the encoder the labels' whole
signal to carry from the first step, and the stream no longer collapses (the default of
``task=promoter`` and ``task=classify``, 1.0: over ten paired promoter seeds +0.0055 test AUROC,
every seed above the k-mer LR; over five seeds of a 3-class set +0.0094 macro AUROC).
It trains only while a fitted path is kept (elsewhere the pooled head already reads the labels
alone, and the term is multiplied by zero, so those runs are unchanged), draws its
initialisation apart from the run's random numbers, and is not exported.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

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

    def build_readout(self, weight: float) -> None:
        """``network_readout``: a ``Linear(pooled size, outputs)`` when ``weight`` is above 0, else
        ``None``. Its random initialisation is drawn on a fork of the generator, so the run's other
        draws do not move. A zero start, tried first, let three promoter seeds of six fall silent
        (docs/metrics.md, "Silent networks")."""
        if not weight >= 0:
            raise InputError(f"task.network_readout={weight} must be a weight of 0 or more (0: no read-out).")
        self.network_readout_weight = float(weight)
        self.network_readout = None
        self.readout_trains: bool | None = None  # whether a fitted path is kept: known once training starts
        if weight:
            with torch.random.fork_rng(devices=[]):  # its initialisation draws; the run's own draws stay as they were
                self.network_readout = nn.Linear(self.head.pool.output_size, self.output.num_outputs)

    def readout_loss(self, pooled: torch.Tensor, labels: torch.Tensor | None) -> torch.Tensor | float:
        """The read-out's weighted loss on ``pooled [B, pool size]`` against ``labels [B, outputs]``
        while a fitted path is kept; otherwise (and with ``labels`` None, a label-free warm-up) its
        outputs times zero, so that every parameter takes part, as DDP requires. 0.0 without a read-out."""
        if self.network_readout is None:
            return 0.0
        logits = self.network_readout(pooled)
        if self.readout_trains is None:
            path = self.head.composition
            self.readout_trains = isinstance(path, FittedKmerComposition) and bool(path.weight.abs().sum() > 0)
        if labels is None or not self.readout_trains:
            return 0.0 * logits.sum()
        return self.network_readout_weight * self.loss(logits, labels)

    def configure_gradient_clipping(self, optimizer: torch.optim.Optimizer, gradient_clip_val: float | None = None,
                                    gradient_clip_algorithm: str | None = None) -> None:
        """Lightning's clipping (``trainer.gradient_clip_val``), without the read-out's parameters
        where it does not train: their zero gradients would add terms to the gradient norm's sum,
        and the rounding of that sum would make a run without a kept path drift from the same run
        without a read-out. Where it trains, every parameter is clipped together, as measured."""
        if self.network_readout is None or self.readout_trains or not gradient_clip_val:
            return super().configure_gradient_clipping(optimizer, gradient_clip_val, gradient_clip_algorithm)
        readout = {id(p) for p in self.network_readout.parameters()}
        params = [p for group in optimizer.param_groups for p in group["params"] if id(p) not in readout]
        if gradient_clip_algorithm in (None, "norm"):
            torch.nn.utils.clip_grad_norm_(params, gradient_clip_val)
        else:
            torch.nn.utils.clip_grad_value_(params, gradient_clip_val)

    def on_fit_start(self) -> None:
        """With ``task.head.composition_fit=first``, fit the composition path on the training split
        unless a checkpoint already brought a fit."""
        self.readout_trains = None
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
