"""What every task's LightningModule shares: the optimizer, and the tokenizer inside checkpoints."""

from __future__ import annotations

from typing import Any

import lightning as L

from bigbird_dna.tasks.optim import build_optimizer


class EncoderTask(L.LightningModule):
    """Base of the task modules. Subclasses set ``self.tokenizer_json`` (the tokenizer's JSON text)
    and save ``optim`` among their hyperparameters.

    The tokenizer is embedded in every checkpoint (a plain string, so ``weights_only`` loads work),
    so a resumed or reloaded run always decodes ids the way it was trained.
    """

    tokenizer_json: str | None = None

    def configure_optimizers(self):
        return build_optimizer(self, self.hparams.optim, self.trainer.estimated_stepping_batches)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["tokenizer_json"] = self.tokenizer_json

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.tokenizer_json = checkpoint.get("tokenizer_json", self.tokenizer_json)
