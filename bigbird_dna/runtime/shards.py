"""Which share of a dataset this process reads: its DDP rank and the world size."""

from __future__ import annotations

import torch


def rank_and_world_size() -> tuple[int, int]:
    """``(rank, world size)`` of the initialised process group, or ``(0, 1)`` without one."""
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        return torch.distributed.get_rank(), torch.distributed.get_world_size()
    return 0, 1
