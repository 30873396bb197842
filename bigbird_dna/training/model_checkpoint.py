"""The run's checkpoint callback: the best checkpoint by the task's metric, and ``last.ckpt`` after
every validation.

Lightning 2.6 writes ``last.ckpt`` only at a validation that also saved a top-k checkpoint. With
``save_top_k: 1`` a run whose monitored metric stops improving keeps a stale ``last.ckpt``: a run
killed without warning (SIGKILL, out of memory, a lost node) then resumes from its last improvement,
not its last validation, and silently trains those steps again on other batches. This callback
saves ``last.ckpt`` at every validation, whatever the top-k decision was.
"""

from __future__ import annotations

from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint


class BestAndLastCheckpoint(ModelCheckpoint):
    """``ModelCheckpoint`` (same arguments) whose ``last.ckpt`` follows every validation."""

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        super().on_validation_end(trainer, pl_module)  # best (when improved) and then last
        if (not self.save_last or self._should_skip_saving_checkpoint(trainer)
                or self._should_save_on_train_epoch_end(trainer)):
            return  # already saved at this step, not fitting, or saving at epoch ends instead
        self._save_last_checkpoint(trainer, self._monitor_candidates(trainer))


def save_final_state(trainer: L.Trainer, checkpoint: ModelCheckpoint, run_dir: Path) -> str:
    """Make ``last.ckpt`` hold the final step and return its path.

    ModelCheckpoint saves only when it validates, so ``last.ckpt`` lags behind when ``max_steps``
    is not a multiple of ``val_check_interval`` (and does not exist when no validation ran).
    """
    if checkpoint.last_model_path and getattr(checkpoint, "_last_global_step_saved", -1) == trainer.global_step:
        return checkpoint.last_model_path
    if not checkpoint.save_last and checkpoint.best_model_path:
        return checkpoint.last_model_path
    path = checkpoint.last_model_path or str(Path(checkpoint.dirpath or run_dir / "checkpoints") / "last.ckpt")
    trainer.save_checkpoint(path, weights_only=False)
    return path
