"""Batches without padding reach the encoder with ``attention_mask=None``, decided on the host.

The attention kernels then skip the key-padding path (on an H100 at 64K tokens: 1.66 ms against
1.97 ms with an all-True mask). These tests check that the decision is taken on CPU tensors only,
that every place a batch is built takes it (training's DataModules, predict, ``BigBirdDNA``), and
that ``None`` gives the numbers of the all-True mask, with a convolution and an ETC layout too.
"""
import pytest
import torch

from bigbird_dna.data.labelled import LabelledSequenceCollator
from bigbird_dna.data.loaders import DropsFullPaddingMasks
from bigbird_dna.inference.scan import score_windows
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.tokenizer import char_tokenizer
from bigbird_dna.tokenizer.specials import padding_mask_or_none


def test_only_an_all_true_cpu_mask_becomes_none():
    full = torch.ones(2, 5, dtype=torch.bool)
    padded = full.clone()
    padded[1, 3:] = False
    assert padding_mask_or_none(full) is None
    assert padding_mask_or_none(padded) is padded
    assert padding_mask_or_none(None) is None
    meta = torch.ones(2, 5, dtype=torch.bool, device="meta")  # any non-CPU tensor: kept, never read
    assert padding_mask_or_none(meta) is meta


@pytest.mark.parametrize("config", [
    {"conv_kernel": 5},
    {"attention": {"preset": "bigbird_etc", "block_size": 16, "backend": "torch",
                   "params": {"num_global": 1, "window": 3}}},
])
def test_encoder_without_a_mask_equals_the_all_true_mask(config):
    torch.manual_seed(0)
    base = {"vocab_size": 12, "hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64,
            "max_positions": 256, "dropout": 0.0, "attention": {"block_size": 16, "backend": "torch"}}
    encoder = BigBirdEncoder(EncoderConfig(**(base | config))).eval()
    ids = torch.randint(5, 12, (2, 100), generator=torch.Generator().manual_seed(1))
    want = encoder(ids, torch.ones_like(ids, dtype=torch.bool))
    got = encoder(ids, None)
    torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-6)
    padded = torch.ones_like(ids, dtype=torch.bool)
    padded[1, 80:] = False
    assert not torch.allclose(encoder(ids, padded)[1, :80], want[1, :80], atol=1e-4)  # the mask still counts


def test_datamodules_drop_the_mask_of_full_batches_only():
    collate = LabelledSequenceCollator(char_tokenizer(), max_tokens=64)
    hook = DropsFullPaddingMasks().on_before_batch_transfer
    full = collate([("ACGTACGT", [1.0]), ("TTGCAACG", [0.0])])
    ragged = collate([("ACGTACGT", [1.0]), ("TTG", [0.0])])
    assert hook(full, 0)["attention_mask"] is None and torch.equal(hook(full, 0)["input_ids"], full["input_ids"])
    assert torch.equal(hook(ragged, 0)["attention_mask"], ragged["attention_mask"])
    assert full["attention_mask"] is not None  # the collator's own batch is not changed

    from bigbird_dna.data.labelled import LabelledDataModule
    from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
    assert issubclass(LabelledDataModule, DropsFullPaddingMasks)
    assert issubclass(GenomeMLMDataModule, DropsFullPaddingMasks)


def test_predict_passes_no_mask_for_full_windows():
    seen = []

    def model(ids, mask):
        seen.append(None if mask is None else mask.clone())
        return torch.zeros(ids.shape[0], 1)

    windows = [ScanWindow("chr", 0, 8, "+", "ACGTACGT", 0.0), ScanWindow("chr", 8, 16, "+", "TTGCAACG", 0.0),
               ScanWindow("chr", 16, 24, "+", "GGCATTAC", 0.0), ScanWindow("chr", 24, 27, "+", "TTG", 0.0)]
    scored = list(score_windows(model, char_tokenizer(), windows, batch_size=2, max_tokens=64,
                                device=torch.device("cpu")))
    assert len(scored) == 4
    assert seen[0] is None  # two full 8-bp windows: [CLS] + 8 + [SEP] each, no padding
    assert seen[1] is not None and seen[1].sum(1).tolist() == [10, 5]  # the record's short end is padded
