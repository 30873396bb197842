"""``callbacks.weight_average``: an exponential moving average (EMA) of the weights is what a run
validates, checkpoints, tests and exports (off unless ``task.schedule.ema_decay`` is set).

After every optimizer step the average moves ``1 - decay`` of the way to the current weights, so it
spans about ``1 / (1 - decay)`` steps (0.99: the last hundred or so). Early stopping and the best
checkpoint therefore judge the averaged weights, and the best checkpoint's ``state_dict`` holds them,
so ``validate``, ``test`` and the export read the same weights that were judged; the raw weights stay
in the checkpoint (``current_model_state``) for a resumed run to continue from.

Built on Lightning's :class:`~lightning.pytorch.callbacks.EMAWeightAveraging`, with two changes for
this pipeline: floating-point buffers (the stem's batch-norm statistics) are averaged like the
weights and integer ones copied, and outside ``fit`` the callback leaves loaded checkpoints alone
(Lightning's would put the raw weights back into the module for a ``test`` of the best checkpoint).
"""

from __future__ import annotations

from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import EMAWeightAveraging
from lightning.pytorch.trainer.states import TrainerFn

from bigbird_dna.errors import InputError


def _ema(decay: float):
    """``AveragedModel``'s ``avg_fn``: ``averaged + (1 - decay) * (current - averaged)`` for
    floating-point tensors, ``current`` for the rest (step counters)."""

    def average(averaged: torch.Tensor, current: torch.Tensor, _count: torch.Tensor) -> torch.Tensor:
        if not averaged.is_floating_point():
            return current
        return torch.lerp(averaged, current, 1.0 - decay)

    return average


class ExponentialWeightAverage(EMAWeightAveraging):
    """Lightning's EMA callback, fit-only: validation during ``fit`` runs on the average; a
    ``validate`` or ``test`` after it runs on whatever checkpoint it loads (whose ``state_dict`` is
    the average)."""

    def __init__(self, decay: float):
        super().__init__(decay=decay)
        self.decay = decay
        self._kwargs["avg_fn"] = _ema(decay)

    @staticmethod
    def _fitting(trainer: L.Trainer) -> bool:
        return trainer.state.fn == TrainerFn.FITTING

    def on_validation_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._fitting(trainer):
            super().on_validation_epoch_start(trainer, pl_module)

    def on_validation_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if self._fitting(trainer):
            super().on_validation_epoch_end(trainer, pl_module)

    def on_load_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict[str, Any]) -> None:
        if self._fitting(trainer):  # a resume: the average and the raw weights both come back
            super().on_load_checkpoint(trainer, pl_module, checkpoint)


def weight_averaging(decay: float | None) -> ExponentialWeightAverage | None:
    """The EMA callback at ``decay`` (in (0, 1)), or ``None`` (no callback) when ``decay`` is ``None``."""
    if decay is None:
        return None
    if not 0.0 < float(decay) < 1.0:
        raise InputError(f"task.schedule.ema_decay={decay} must be in (0, 1) (0.99: an average over about the "
                         "last 100 steps), or null to train without weight averaging.")
    return ExponentialWeightAverage(float(decay))
