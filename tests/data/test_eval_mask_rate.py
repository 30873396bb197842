"""Training may mask more than evaluation scores: ``data.eval_mask_prob`` sets the val/test rate."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.data.mlm.masking import IGNORE_INDEX
from bigbird_dna.errors import InputError
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


def _data(tmp_path, **kwargs) -> GenomeMLMDataModule:
    data = GenomeMLMDataModule(str(LAMBDA), window_bp=500, seed=0, run_dir=tmp_path, batch_size=16, num_workers=0,
                               eval_windows=16, windows_per_epoch=16, holdout_fraction=0.2, **kwargs)
    data.attach_tokenizer(char_tokenizer(), 512)
    data.setup("fit")
    return data


def test_span_masking_masks_runs_in_training_and_leaves_evaluation_on_single_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    spans, singles = _data(tmp_path / "a", mask_span=8), _data(tmp_path / "b")
    train = next(iter(spans.train_dataloader()))["labels"] != IGNORE_INDEX
    starts = train[:, 1:] & ~train[:, :-1]
    assert float(train.sum() / starts.sum()) >= 8  # runs of 8, some merged
    assert float(train.sum() / spans.train_dataloader().batch_size) == pytest.approx(0.15 * 502, rel=0.25)
    single = next(iter(singles.train_dataloader()))["labels"] != IGNORE_INDEX
    assert float(single.sum() / (single[:, 1:] & ~single[:, :-1]).sum()) < 1.3
    for split in ("val_dataloader", "test_dataloader"):  # the honest metrics do not move
        first = [next(iter(getattr(data, split)()))["labels"] for data in (spans, singles)]
        assert torch.equal(*first)
    with pytest.raises(InputError, match="data.mask_span=0"):
        _data(tmp_path / "c", mask_span=0)
