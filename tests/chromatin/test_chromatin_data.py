"""Streaming DeepSEA samples: slabs shared out evenly over DDP ranks and DataLoader workers, each
worker with its own HDF5 handle, and indices that put evaluation rows back in file order."""

from __future__ import annotations

import collections

import pytest
from torch.utils.data import DataLoader

from bigbird_dna.data.chromatin.datamodule import DeepSEASamples
from bigbird_dna.data.chromatin.deepsea import DeepSEAFile
from bigbird_dna.runtime import shards


def _indices(dataset: DeepSEASamples, monkeypatch, rank: int, world_size: int) -> list[int]:
    monkeypatch.setattr(shards, "rank_and_world_size", lambda: (rank, world_size))
    return [index for _, _, index in dataset]


def test_evaluation_ranks_get_equal_contiguous_shares_padded_by_wrapping(planted_bundle, monkeypatch):
    dataset = DeepSEASamples(DeepSEAFile(planted_bundle / "valid.mat", 919), chunk_size=10)  # 256 rows
    shares = [_indices(dataset, monkeypatch, rank, 3) for rank in range(3)]
    assert [len(s) for s in shares] == [86, 86, 86]
    assert shares[0] == list(range(86)) and shares[2] == list(range(172, 256)) + [0, 1]
    assert set().union(*shares) == set(range(256))


def test_training_ranks_get_equal_disjoint_shares_in_a_new_order_each_epoch(planted_bundle, monkeypatch):
    dataset = DeepSEASamples(DeepSEAFile(planted_bundle / "train.mat", 919), chunk_size=30, shuffle=True, seed=1)
    shares = [_indices(dataset, monkeypatch, rank, 2) for rank in range(2)]
    assert len(shares[0]) == len(shares[1]) == len(dataset) > 100
    assert not set(shares[0]) & set(shares[1])
    dataset.set_epoch(1)
    assert _indices(dataset, monkeypatch, 0, 2) != shares[0]
    dataset.set_epoch(0)
    assert _indices(dataset, monkeypatch, 0, 2) == shares[0]  # reproducible from (seed, epoch)


@pytest.mark.parametrize("name", ["train.mat", "valid.mat"])
def test_dataloader_workers_each_read_their_own_slabs_once(planted_bundle, name):
    file = DeepSEAFile(planted_bundle / name, 919)
    file.read(0, 1)  # a handle opened in the parent must not be reused by forked workers
    loader = DataLoader(DeepSEASamples(file, chunk_size=16), batch_size=None, num_workers=2)
    counts = collections.Counter(index for _, _, index in loader)
    assert counts == collections.Counter(range(len(file)))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_resumed_epoch_continues_with_the_batches_an_uninterrupted_one_yields(planted_bundle, workers):
    dataset = DeepSEASamples(DeepSEAFile(planted_bundle / "train.mat", 919), chunk_size=40, shuffle=True, seed=3,
                             reverse_complement_prob=0.5)

    def batches() -> list:
        loader = DataLoader(dataset, batch_size=8, num_workers=workers,
                            collate_fn=lambda items: [(index, seq[:12]) for seq, _, index in items])
        return list(loader)

    uninterrupted = batches()
    dataset.resume_at(5, 8)
    assert batches() == uninterrupted[5:]
