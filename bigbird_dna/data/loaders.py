"""Pieces every DataModule shares: a train loader Lightning can checkpoint and resume, the seed of
a loader's own generator, the wait of DDP ranks > 0 for a file rank 0 writes, and dropping the
padding mask of batches without padding before they move to the GPU."""

from __future__ import annotations

import logging
import signal
import time
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.utilities import rank_zero_info
from torch.utils.data import DataLoader, Dataset

from bigbird_dna.errors import InputError
from bigbird_dna.runtime.distributed import rank_and_world_size
from bigbird_dna.tokenizer.specials import padding_mask_or_none

log = logging.getLogger(__name__)

# How long a DDP rank > 0 waits for rank 0 to write a shared file (rank 0 may be training a
# tokenizer on a large genome first).
RANK_WAIT_S = 3600.0


def ignore_stop_signals(worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: the worker ignores SIGTERM, SIGUSR1 and SIGINT.

    Schedulers and shells signal every process of a job: ``scancel``, ``timeout``, SLURM's warning
    before the time limit, Ctrl-C in a terminal. The main process records the signal and stops at
    the next step boundary with a checkpoint (:mod:`bigbird_dna.runtime.signals`), then shuts its
    workers down itself; a worker ended by the signal would instead stop the run at once with a
    DataLoader error and no checkpoint. Workers still exit when the main process dies.
    """
    for stop in (signal.SIGTERM, signal.SIGUSR1, signal.SIGINT):
        signal.signal(stop, signal.SIG_IGN)


def check_loader_settings(batch_size: int, num_workers: int) -> None:
    """Refuse a batch size below 1 or a negative worker count, naming the setting."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InputError(f"data.batch_size={batch_size}: give a positive number of sequences per batch (per device).")
    if not isinstance(num_workers, int) or num_workers < 0:
        raise InputError(f"data.num_workers={num_workers}: give 0 (load in the main process) or more workers.")


def loader_generator(seed: int, epoch: int) -> torch.Generator:
    """A DataLoader's own generator (shuffling and worker seeds), from ``(seed, epoch)``.

    Building a loader's iterator with its own generator leaves the global torch RNG, and so
    dropout, as it is: a resumed run draws the same dropout masks as an uninterrupted one.
    """
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


def batches_done(trainer) -> int:
    """Batches of the current epoch this rank has trained on: what a resumed loader skips.

    The trainer's batch progress, not the loader's own count, which includes prefetched batches.
    """
    return trainer.fit_loop.epoch_loop.batch_progress.current.processed if trainer is not None else 0


def wait_for_file(path: Path, timeout_s: float = RANK_WAIT_S) -> None:
    """Block until ``path`` exists (written by rank 0), or raise :class:`InputError` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise InputError(f"waited {timeout_s:.0f} s for rank 0 to write {path}, in vain. Check rank 0's log; "
                             "every rank must use the same run directory (hydra.run.dir=...).")
        time.sleep(1.0)


class ResumableLoader(DataLoader):
    """A train DataLoader that Lightning can checkpoint and resume, over a dataset with
    ``resume_at(batches, batch_size)`` (:class:`~bigbird_dna.genome.windows.GenomeWindows`, DeepSEA slabs).

    Lightning saves ``state_dict()`` of every train loader that has one (the ``_Stateful``
    protocol) into the checkpoint's fit-loop state, and calls ``load_state_dict()`` on the
    rebuilt loader before iterating it when a run restarts from that checkpoint.

    Args:
        position: returns how many batches of the current epoch this rank has consumed (the
            trainer's batch progress; the loader's own count would include prefetched batches).
        epoch: the epoch this loader serves.
    """

    def __init__(self, dataset: Dataset, *args, position=None, epoch: int = 0, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        self._position = position
        self._epoch = epoch

    def state_dict(self) -> dict[str, int]:
        return {
            "epoch": self._epoch,
            "batches": int(self._position() if self._position else 0),
            "batch_size": int(self.batch_size or 0),
            "num_workers": self.num_workers,
            "world_size": rank_and_world_size()[1],
        }

    def load_state_dict(self, state: dict[str, int]) -> None:
        if state.get("epoch") != self._epoch or not state.get("batches"):
            return  # saved at an epoch's end: the new epoch starts from its first window
        saved = (state.get("batch_size"), state.get("num_workers"), state.get("world_size"))
        now = (self.batch_size, self.num_workers, rank_and_world_size()[1])
        if saved != now:
            log.warning("Resuming with (batch size, workers, world size) %s instead of %s: skipping %d batches "
                        "keeps the epoch's length, but not exactly the windows of the interrupted run.",
                        now, saved, state["batches"])
        rank_zero_info(f"Resuming the train data of epoch {self._epoch} after its first {state['batches']} batches")
        self.dataset.resume_at(state["batches"], int(self.batch_size or 1))

    def __iter__(self):
        iterator = super().__iter__()  # the dataset's iterator (or its workers) exists now
        self.dataset.resume_at(0, 0)
        return iterator


class DropsFullPaddingMasks:
    """DataModule mixin: a batch without padding loses its all-True ``attention_mask`` (set to
    ``None``) while still on the CPU, so the encoder runs the attention kernels without the
    key-padding path: the same numbers, faster kernels, and no device sync to find out."""

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        if isinstance(batch, dict) and batch.get("attention_mask") is not None:
            batch = dict(batch, attention_mask=padding_mask_or_none(batch["attention_mask"]))
        return batch
