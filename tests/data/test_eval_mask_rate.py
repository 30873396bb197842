"""Training may mask more than evaluation scores: ``data.eval_mask_prob`` sets the val/test rate."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.data.mlm.masking import IGNORE_INDEX
from bigbird_dna.tokenizer import char_tokenizer
from tests.conftest import LAMBDA


def _selected_share(loader) -> tuple[float, torch.Tensor, torch.Tensor]:
    batch = next(iter(loader))
    scored = batch["labels"] != IGNORE_INDEX
    real = batch["attention_mask"].bool()
    return float(scored.sum() / real.sum()), batch["input_ids"][scored], batch["labels"][scored]


@pytest.mark.parametrize("eval_rate, expected_eval", [(0.1, 0.1), (None, 0.4)])
def test_train_and_eval_select_at_their_own_rates(tmp_path, monkeypatch, eval_rate, expected_eval):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    data = GenomeMLMDataModule(str(LAMBDA), window_bp=500, seed=0, run_dir=tmp_path, mask_prob=0.4,
                               eval_mask_prob=eval_rate, batch_size=16, num_workers=0, eval_windows=16,
                               windows_per_epoch=16, holdout_fraction=0.2)
    tokenizer = char_tokenizer()
    data.attach_tokenizer(tokenizer, 512)
    data.setup("fit")
    train_share, train_inputs, _ = _selected_share(data.train_dataloader())
    val_share, val_inputs, _ = _selected_share(data.val_dataloader())
    assert train_share == pytest.approx(0.4, abs=0.03)
    assert val_share == pytest.approx(expected_eval, abs=0.03)
    assert bool((val_inputs == tokenizer.mask_id).all())  # every scored val input is [MASK]
    assert not bool((train_inputs == tokenizer.mask_id).all())  # train keeps 80/10/10
