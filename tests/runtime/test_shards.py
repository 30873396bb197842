"""A process's share of a streamed dataset: items dealt to ranks then workers, and after a resume
the worker rotation and the items each worker already gave."""

from __future__ import annotations

import math

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

from bigbird_dna.runtime.shards import Shard, current_shard


def test_items_are_dealt_to_ranks_first_then_to_workers_as_a_partition():
    shards = [Shard(rank, 2, worker, 3) for rank in range(2) for worker in range(3)]
    dealt = [list(shard.indices(20)) for shard in shards]
    assert dealt[0] == [0, 6, 12, 18] and dealt[1] == [2, 8, 14] and dealt[3] == [1, 7, 13, 19]
    assert sorted(i for share in dealt for i in share) == list(range(20))


def test_the_main_process_is_worker_0_of_1_and_skips_nothing_without_a_resume():
    assert current_shard() == Shard(0, 1, 0, 1, skip=0)
    assert current_shard(7, 4) == Shard(0, 1, 0, 1, skip=28)  # one worker: every batch was its own


class _Shards(IterableDataset):
    def __init__(self, batches: int, batch_size: int):
        self.resume = (batches, batch_size)

    def __iter__(self):
        shard = current_shard(*self.resume)
        yield torch.tensor([shard.worker, shard.skip])


@pytest.mark.parametrize("batches", [1, 2, 5, 6])
def test_a_resumed_worker_continues_the_round_robin_where_it_stopped(batches):
    workers, batch_size = 3, 4
    got = [tuple(item.tolist()) for item in DataLoader(_Shards(batches, batch_size), batch_size=None,
                                                       num_workers=workers)]
    for new_worker, (old_worker, skip) in enumerate(got):
        assert old_worker == (new_worker + batches) % workers
        # batches 0..batches-1 came from workers 0, 1, 2, 0, ...: count those of old_worker
        assert skip == math.ceil((batches - old_worker) / workers) * batch_size
        assert skip == sum(1 for b in range(batches) if b % workers == old_worker) * batch_size
