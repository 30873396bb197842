"""The train loader's position survives a restart: a resumed loader yields exactly the batches the
interrupted one had not yet yielded, whatever the worker count, and every window keeps its masks."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.data.loaders import ResumableLoader
from bigbird_dna.data.mlm.collator import MLMCollator
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.splits import Region
from bigbird_dna.genome.windows import GenomeWindows
from bigbird_dna.runtime.shards import Shard
from bigbird_dna.tokenizer import train_bpe_tokenizer
from tests.conftest import LAMBDA


@pytest.fixture(scope="module")
def windows(tmp_path_factory):
    genome = open_genome(LAMBDA, tmp_path_factory.mktemp("cache"))
    regions = [Region(name, 0, length) for name, length in genome.record_lengths.items()]
    return GenomeWindows(genome, regions, window_bp=300, num_windows=48, seed=5, reverse_complement_prob=0.5)


def _ids(items):
    return [f"{i['index']} {i['record']}:{i['start']}{i['strand']}" for i in items]


def _loader(dataset, workers, epoch=0):
    return ResumableLoader(dataset, batch_size=4, num_workers=workers, collate_fn=_ids, epoch=epoch,
                           generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("workers", [0, 2, 3])
def test_a_resumed_loader_yields_exactly_the_batches_not_yet_consumed(windows, workers):
    windows.set_epoch(1)
    full = list(_loader(windows, workers, epoch=1))
    assert len(full) == 12
    for consumed in (1, 2, 5, 11):
        loader = _loader(windows, workers, epoch=1)
        loader.load_state_dict({"epoch": 1, "batches": consumed, "batch_size": 4, "num_workers": workers,
                                "world_size": 1})
        assert list(loader) == full[consumed:], f"after {consumed} batches"
        assert list(loader) == full  # the skip applies to one iteration only


def test_a_position_from_another_epoch_is_ignored(windows):
    windows.set_epoch(2)
    loader = _loader(windows, 0, epoch=2)
    full = list(loader)
    loader.load_state_dict({"epoch": 1, "batches": 12, "batch_size": 4, "num_workers": 0, "world_size": 1})
    assert list(loader) == full


def test_training_masks_depend_on_the_window_not_on_its_batch(windows):
    chunks = [w["seq"] for w in windows.iter_shard(Shard(0, 1, 0, 1))]
    tokenizer = train_bpe_tokenizer(chunks, vocab_size=64, max_token_length=8)
    collate = MLMCollator(tokenizer, max_tokens=128, mask_prob=0.3, seed=1, epoch=3)
    items = list(windows.iter_shard(Shard(0, 1, 0, 1)))[:6]
    together = collate(items)
    apart = [collate(items[:1]), collate(items[1:4]), collate(items[4:])]
    rows = [(batch, i) for batch in apart for i in range(len(batch["windows"]))]
    for row, (batch, i) in enumerate(rows):
        n = int(batch["attention_mask"][i].sum())
        assert torch.equal(together["input_ids"][row, :n], batch["input_ids"][i, :n])
        assert torch.equal(together["labels"][row, :n], batch["labels"][i, :n])
    assert (together["labels"] != -100).any()
    other_epoch = MLMCollator(tokenizer, max_tokens=128, mask_prob=0.3, seed=1, epoch=4)(items)
    assert not torch.equal(other_epoch["labels"], together["labels"])
