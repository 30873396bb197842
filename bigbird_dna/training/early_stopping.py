"""Early stopping on the task's monitored validation metric, for tasks with finite labelled data.

A task config opts in with ``schedule.patience`` (validations without improvement before the run
stops); MLM pretraining, whose data is a stream of genome windows, leaves it unset and runs its
``max_steps``. The best checkpoint (not the last) is what gets validated, tested and exported.
"""

from __future__ import annotations

from lightning.pytorch.callbacks import EarlyStopping


def early_stopping(monitor: str, mode: str, patience: int | None, min_delta: float = 0.0) -> EarlyStopping | None:
    """An ``EarlyStopping`` callback, or ``None`` (no callback) when ``patience`` is ``None``."""
    if patience is None:
        return None
    return EarlyStopping(monitor=monitor, mode=mode, patience=int(patience), min_delta=min_delta,
                         check_on_train_epoch_end=False, verbose=True)
