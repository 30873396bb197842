"""Early stopping on the task's monitored validation metric, for tasks with finite labelled data.

A task config opts in with ``schedule.patience`` (validations without improvement before the run
stops); MLM pretraining, whose data is a stream of genome windows, leaves it unset and runs its
``max_steps``. The best checkpoint (not the last) is what gets validated, tested and exported.
Validations during a task's label-free warm-up (``in_label_free_warmup``, the shuffle contrast of
:mod:`bigbird_dna.tasks.shuffle_contrast`) are not counted: the head has not seen a label yet.
"""

from __future__ import annotations

import lightning as L
from lightning.pytorch.callbacks import EarlyStopping


class EarlyStoppingAfterWarmup(EarlyStopping):
    """``EarlyStopping`` (same arguments) that neither counts nor keeps validations run while the
    module says ``in_label_free_warmup``."""

    def _run_early_stopping_check(self, trainer: L.Trainer) -> None:
        if getattr(trainer.lightning_module, "in_label_free_warmup", False):
            return
        super()._run_early_stopping_check(trainer)


def early_stopping(monitor: str, mode: str, patience: int | None, min_delta: float = 0.0) -> EarlyStopping | None:
    """An ``EarlyStopping`` callback, or ``None`` (no callback) when ``patience`` is ``None``."""
    if patience is None:
        return None
    return EarlyStoppingAfterWarmup(monitor=monitor, mode=mode, patience=int(patience), min_delta=min_delta,
                                   check_on_train_epoch_end=False, verbose=True)
