"""Which share of a dataset this process reads: its DDP rank and the world size, its DataLoader
worker, and after a mid-epoch resume the items of its share that it already yielded.

Streaming datasets deal their items (windows, tiles, slabs) to ranks first, then to the DataLoader
workers of each rank, and a DataLoader takes batches from its workers round-robin, always starting
at worker 0. A loader restarted after ``batches`` batches of an epoch therefore starts at worker 0
while the epoch's next batch came from worker ``batches % workers``: :func:`current_shard` rotates
the workers (resumed worker ``w`` continues the share of original worker ``(w + batches) %
workers``) and says how many items that share already gave, ``ceil((batches - w') / workers)``
whole batches of ``batch_size`` (``w'`` the rotated worker). This is exact while the world size,
worker count and batch size stay the same, and while every worker emits whole batches.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.utils.data import get_worker_info


def rank_and_world_size() -> tuple[int, int]:
    """``(rank, world size)`` of the initialised process group, or ``(0, 1)`` without one."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1


@dataclass(frozen=True)
class Shard:
    """DataLoader ``worker`` of ``workers`` on DDP ``rank`` of ``world_size``, which skips the first
    ``skip`` items of its share (those a resumed run already trained on)."""

    rank: int
    world_size: int
    worker: int
    workers: int
    skip: int = 0

    def indices(self, count: int) -> range:
        """This shard's item indices among ``0..count-1``: dealt to ranks first, then to workers
        (the ``skip`` items included)."""
        return range(self.rank + self.world_size * self.worker, count, self.world_size * self.workers)


def current_shard(resume_batches: int = 0, batch_size: int = 0) -> Shard:
    """The shard of the calling process (a DataLoader worker, or the main process as worker 0 of
    1), for an iterator that resumes after ``resume_batches`` batches of ``batch_size`` items that
    this rank's loader already yielded this epoch (0: from the start); see the module docstring."""
    rank, world_size = rank_and_world_size()
    info = get_worker_info()
    worker, workers = (info.id, info.num_workers) if info else (0, 1)
    if not resume_batches:
        return Shard(rank, world_size, worker, workers)
    worker = (worker + resume_batches) % workers
    done_batches = max(0, -(-(resume_batches - worker) // workers))  # ceil: the rotated worker's share
    return Shard(rank, world_size, worker, workers, skip=done_batches * batch_size)
