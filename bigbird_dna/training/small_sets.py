"""Small labelled sets: enough optimizer steps, and no choice made on a handful of validation sequences.

A labelled task trains whole epochs (``task.schedule.max_epochs``), validates after each, stops
after ``patience`` validations without improvement and tests the best checkpoint. That suits
thousands of sequences. With 100 sequences, batches of 32 and 6 epochs, the model would take 18
optimizer steps, and early stopping and the best checkpoint would be chosen on the AUROC of 10
validation sequences, which jumps by 0.04 with each one of them. These settings of
``task.schedule`` guard against that:

- ``min_steps``: when the epochs give fewer optimizer steps than this, the run trains for more
  epochs, so that it takes at least ``min_steps`` (the learning-rate schedule spans them). It then
  validates about ``max_epochs`` times in all, not after every short epoch.
- ``min_val_sequences``: with fewer validation sequences than this, early stopping is off and the
  run's last state, not the best on validation, is tested and exported.
- ``small_train_sequences``: a training set of fewer sequences gets the small-set recipe: at least
  ``small_min_steps`` steps (as ``min_steps``), ``optim.layer_decay`` set to
  ``small_layer_decay``, so that each layer below the head learns at that factor of the one above,
  and the encoder's dropout set to ``small_encoder_dropout`` (over ``task.encoder_dropout``).
  The head fits the pooled features of a nearly fixed encoder, a linear model with many steps,
  while the encoder adapts only a little: what 90 sequences can support.

All are decided from the data before the fit (the same on resume) and said in the log and in the
summary (``small_set``). ``null`` turns any of them off. The labelled defaults hold out
``min_val_sequences=200`` and give sets under 500 sequences 600 steps at layer decay 0.1 with an
encoder dropout of 0.1, where larger sets train without; measured
in the metrics guide ("Small sets"): on 100-sequence subsamples of *A. thaliana* promoters the
default schedule alone (18 steps) scored below the k-mer LR, and more steps alone overfitted.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import lightning as L
from lightning.pytorch.callbacks import EarlyStopping

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SmallSetPlan:
    """What a run changes for a small set.

    ``epochs``/``validate_every``: the stretched epoch count and validation stride (``None``: as
    configured); ``keep_last``: early stopping off, the last state tested and exported;
    ``layer_decay``: the small-set recipe's ``optim.layer_decay`` and ``encoder_dropout`` its
    encoder dropout (``None``: as configured).
    """

    train_sequences: int
    val_sequences: int
    steps_per_epoch: int
    epochs: int | None = None
    validate_every: int | None = None
    keep_last: bool = False
    layer_decay: float | None = None
    encoder_dropout: float | None = None

    @property
    def changes(self) -> bool:
        return (self.epochs is not None or self.keep_last or self.layer_decay is not None
                or self.encoder_dropout is not None)

    def describe(self, min_val_sequences: int | None) -> list[str]:
        """One log line per change."""
        lines = []
        if self.layer_decay is not None:
            lines.append(f"small training set: {self.train_sequences} sequences (under task.schedule."
                         f"small_train_sequences); optim.layer_decay={self.layer_decay}: each layer below the head "
                         "learns at that factor of the one above (task.schedule.small_layer_decay).")
        if self.encoder_dropout is not None:
            lines.append(f"small training set: encoder dropout {self.encoder_dropout} "
                         "(task.schedule.small_encoder_dropout, over task.encoder_dropout).")
        if self.epochs is not None:
            lines.append(f"small training set: {self.train_sequences} sequences make {self.steps_per_epoch} optimizer "
                         f"steps per epoch; training {self.epochs} epochs ({self.epochs * self.steps_per_epoch} steps, "
                         "task.schedule.min_steps or small_min_steps), validating every "
                         f"{self.validate_every}.")
        if self.keep_last:
            lines.append(f"small validation set: {self.val_sequences} sequences (under task.schedule."
                         f"min_val_sequences={min_val_sequences}); no early stopping, and the last state, not the "
                         "best on validation, is tested and exported.")
        return lines


def plan_small_set(train_sequences: int, val_sequences: int, batch_per_step: int, max_epochs: int,
                   min_steps: int | None, min_val_sequences: int | None, small_train_sequences: int | None = None,
                   small_min_steps: int | None = None, small_layer_decay: float | None = None,
                   small_encoder_dropout: float | None = None) -> SmallSetPlan:
    """The plan for a run of ``max_epochs`` epochs whose optimizer steps take ``batch_per_step``
    sequences (batch size x devices x accumulated batches; the last batch of an epoch may be short).
    Under ``small_train_sequences`` training sequences, ``small_min_steps`` raises ``min_steps``,
    ``small_layer_decay`` becomes the plan's ``layer_decay`` and ``small_encoder_dropout`` its
    ``encoder_dropout``."""
    per_epoch = max(1, math.ceil(train_sequences / max(1, batch_per_step)))
    small = small_train_sequences is not None and train_sequences < small_train_sequences
    if small and small_min_steps is not None:
        min_steps = max(min_steps or 0, small_min_steps)
    epochs = stride = None
    if min_steps is not None and max_epochs > 0 and per_epoch * max_epochs < min_steps:
        epochs = math.ceil(min_steps / per_epoch)
        stride = max(1, epochs // max_epochs)
    keep_last = min_val_sequences is not None and val_sequences < min_val_sequences
    layer_decay = float(small_layer_decay) if small and small_layer_decay is not None else None
    dropout = float(small_encoder_dropout) if small and small_encoder_dropout is not None else None
    return SmallSetPlan(train_sequences, val_sequences, per_epoch, epochs, stride, keep_last, layer_decay, dropout)


def apply_small_set_plan(trainer: L.Trainer, datamodule: Any, schedule: dict[str, Any] | None,
                         module: L.LightningModule | None = None) -> SmallSetPlan | None:
    """Decide and apply the plan for ``datamodule``'s train and val splits (``datasets``, sized);
    ``None`` for data without them (genome streams) or a run counted in steps (``max_steps``).
    The recipe's layer decay goes into ``module.hparams.optim`` (read when the fit builds the
    optimizer), only where the optimizer takes one and the run left it at 1 (off); its encoder
    dropout goes into the module's encoder (``set_encoder_dropout``), and so into its export."""
    schedule = dict(schedule or {})
    datasets = getattr(datamodule, "datasets", None)
    if not isinstance(datasets, dict) or trainer.max_steps > 0 or not trainer.max_epochs or trainer.max_epochs < 0:
        return None
    try:
        train, val = len(datasets["train"]), len(datasets.get("val") or ())
    except (KeyError, TypeError):
        return None
    batch = getattr(datamodule, "batch_size", 1) * trainer.world_size * trainer.accumulate_grad_batches
    plan = plan_small_set(train, val, batch, trainer.max_epochs, schedule.get("min_steps"),
                          schedule.get("min_val_sequences"), schedule.get("small_train_sequences"),
                          schedule.get("small_min_steps"), schedule.get("small_layer_decay"),
                          schedule.get("small_encoder_dropout"))
    optim = dict(getattr(module, "hparams", {}).get("optim") or {})
    if plan.layer_decay is not None and (optim.get("layer_decay", 1.0) != 1.0 or "layer_decay" not in optim):
        log.info("small training set: optim.layer_decay left at %s (the small-set recipe sets it only where it "
                 "is 1, off)", optim.get("layer_decay", "unsupported by this optimizer"))
        plan = replace(plan, layer_decay=None)
    if plan.layer_decay is not None:
        module.hparams.optim = {**optim, "layer_decay": plan.layer_decay}
    if plan.encoder_dropout is not None and not hasattr(module, "set_encoder_dropout"):
        plan = replace(plan, encoder_dropout=None)
    if plan.encoder_dropout is not None:
        module.set_encoder_dropout(plan.encoder_dropout)
    if plan.epochs is not None:
        trainer.fit_loop.max_epochs = plan.epochs
        trainer.check_val_every_n_epoch = plan.validate_every
    if plan.keep_last:
        trainer.callbacks = [c for c in trainer.callbacks if not isinstance(c, EarlyStopping)]
    for line in plan.describe(schedule.get("min_val_sequences")):
        log.info(line)
    return plan


def summary_entry(plan: SmallSetPlan | None) -> dict[str, Any]:
    """``{"small_set": {...}}`` for the run summary when the plan changed anything, else ``{}``."""
    return {"small_set": asdict(plan)} if plan is not None and plan.changes else {}
