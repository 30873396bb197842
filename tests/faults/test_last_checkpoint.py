"""``last.ckpt`` follows every validation, also when the monitored metric stops improving."""

from __future__ import annotations

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from bigbird_dna.training.model_checkpoint import BestAndLastCheckpoint


class WorseningModel(L.LightningModule):
    """A linear model whose logged val metric grows with the step: only the first validation is best."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        return self.layer(x).square().mean()

    def validation_step(self, batch, batch_idx):
        self.log("val/loss", float(self.global_step))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


@pytest.mark.parametrize("every", [2, 3])
def test_last_checkpoint_is_the_last_validation_not_the_last_improvement(tmp_path, every):
    data = DataLoader(TensorDataset(torch.randn(64, 2)), batch_size=4)
    checkpoint = BestAndLastCheckpoint(dirpath=tmp_path, filename="best-step{step}", monitor="val/loss",
                                       mode="min", save_last=True, save_top_k=1, auto_insert_metric_name=False)
    trainer = L.Trainer(max_steps=8, val_check_interval=every, limit_val_batches=1, callbacks=[checkpoint],
                        logger=False, enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0)
    trainer.fit(WorseningModel(), data, data)
    last_validation = 8 // every * every
    last = torch.load(tmp_path / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["global_step"] == last_validation
    assert [p.name for p in tmp_path.glob("best-*.ckpt")] == [f"best-step{every}.ckpt"]
