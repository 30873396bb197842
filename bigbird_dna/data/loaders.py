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
from bigbird_dna.runtime.shards import rank_and_world_size
from bigbird_dna.tokenizer.specials import padding_mask_or_none

log = logging.getLogger(__name__)

# How long a DDP rank > 0 waits for rank 0 to write a shared file (rank 0 may be training a
# tokenizer on a large genome first).
RANK_WAIT_S = 3600.0


def ignore_stop_signals(worker_id: int) -> None:
    """DataLoader ``worker_init_fn``: the worker ignores SIGTERM, SIGUSR1 and SIGINT.

    Schedulers and shells signal every process of a job: ``scancel``, ``timeout``, SLURM's warning
    before the time limit, Ctrl-C in a terminal. The main process records the signal and stops at
    the next step boundary with a checkpoint (:mod:`bigbird_dna.training.signals`), then shuts its
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


def pins_memory(trainer) -> bool:
    """Whether loaders should page-lock their batches: when the trainer runs on CUDA. Lightning
    then copies each batch with ``non_blocking=True``, and a copy from page-locked memory never
    makes the host wait for the GPU (one from pageable memory can, at every batch)."""
    strategy = getattr(trainer, "strategy", None) if trainer is not None else None
    return strategy is not None and strategy.root_device.type == "cuda"


def wait_for_file(path: Path, timeout_s: float = RANK_WAIT_S) -> None:
    """Block until ``path`` exists (written by rank 0), or raise :class:`InputError` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise InputError(f"waited {timeout_s:.0f} s for rank 0 to write {path}, in vain. Check rank 0's log; "
                             "every rank must use the same run directory (hydra.run.dir=...).")
        time.sleep(1.0)


def position_state(epoch: int, batches: int, batch_size: int, num_workers: int,
                   world_size: int | None = None) -> dict[str, int]:
    """A train loader's position, as checkpoints keep it: the epoch, how many of its batches this
    rank trained on, and the settings that make that count meaningful (``world_size``: default,
    the initialised process group's)."""
    return {"epoch": int(epoch), "batches": int(batches), "batch_size": int(batch_size or 0),
            "num_workers": int(num_workers), "world_size": world_size or rank_and_world_size()[1]}


def batches_to_skip(state: dict[str, int], epoch: int, batch_size: int, num_workers: int,
                    world_size: int | None = None) -> int:
    """The batches of ``epoch`` a resumed loader skips: the saved count, or 0 when the position
    was saved at an epoch's end or in another epoch. Warns when the settings changed."""
    if state.get("epoch") != epoch or not state.get("batches"):
        return 0  # saved at an epoch's end: the new epoch starts from its first batch
    saved = (state.get("batch_size"), state.get("num_workers"), state.get("world_size"))
    now = (batch_size, num_workers, world_size or rank_and_world_size()[1])
    if saved != now:
        log.warning("Resuming with (batch size, workers, world size) %s instead of %s: skipping %d batches "
                    "keeps the epoch's length, but not exactly the data of the interrupted run.",
                    now, saved, state["batches"])
    rank_zero_info(f"Resuming the train data of epoch {epoch} after its first {state['batches']} batches")
    return int(state["batches"])


class ResumableLoader(DataLoader):
    """A train DataLoader that Lightning can checkpoint and resume, over an iterable dataset with
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
        return position_state(self._epoch, self._position() if self._position else 0, self.batch_size,
                              self.num_workers)

    def load_state_dict(self, state: dict[str, int]) -> None:
        batches = batches_to_skip(state, self._epoch, self.batch_size, self.num_workers)
        if batches:
            self.dataset.resume_at(batches, int(self.batch_size or 1))

    def __iter__(self):
        iterator = super().__iter__()  # the dataset's iterator (or its workers) exists now
        self.dataset.resume_at(0, 0)
        return iterator


class _WithoutFirst:
    """A (batch) sampler without its first ``skip`` entries, which are drawn but never loaded."""

    def __init__(self, sampler, skip: int):
        self.sampler, self.skip = sampler, skip

    def __iter__(self):
        entries = iter(self.sampler)
        for _ in range(self.skip):
            next(entries, None)
        yield from entries

    def __len__(self) -> int:
        return max(0, len(self.sampler) - self.skip)


class ResumableMapLoader(DataLoader):
    """A train DataLoader over a map-style dataset (labelled sequences) that resumes mid-epoch.

    Its first iterator skips ``pending[epoch]`` batches: it draws the epoch's shuffled batches as
    the interrupted run did (the loader's generator is seeded per epoch) and drops the ones
    already trained on without loading them; under DDP each rank skips in its own share.
    ``len()`` stays the whole epoch. ``pending`` belongs to the DataModule
    (:class:`ResumesMidEpoch`), which restores it from the checkpoint before any loader exists.
    """

    def __init__(self, dataset: Dataset, *args, epoch: int = 0, pending: dict | None = None, **kwargs):
        self._epoch = epoch
        self._pending = {} if pending is None else pending
        super().__init__(dataset, *args, **kwargs)

    @property
    def _index_sampler(self):
        sampler = super()._index_sampler
        skip = self._pending.get(self._epoch, 0)
        return _WithoutFirst(sampler, skip) if skip else sampler

    def __len__(self) -> int:
        return len(super()._index_sampler)  # the whole epoch, skipped batches included

    def __iter__(self):
        iterator = super().__iter__()  # it holds the skipping sampler now; later iterators start whole
        self._pending.pop(self._epoch, None)
        return iterator


class ResumesMidEpoch:
    """DataModule mixin: the train position goes into checkpoints, and comes back from them.

    Lightning restores a DataModule's state before it builds any loader. It builds a map-style
    train loader early, to count an epoch's steps for the LR schedule, and never again before the
    first epoch, so a loader's own state would come back too late; a streaming loader
    (:class:`ResumableLoader`) is set up again after the loops' state is back and restores itself.
    Kept here, the first train loader of a resumed run already skips the batches trained on. The DataModule
    builds its train loader as a :class:`ResumableMapLoader` with ``pending=self.resume_position``.
    """

    resume_position: dict[int, int]  # {epoch: batches} to skip, set by load_state_dict

    def _loader_settings(self) -> tuple[int, int, int | None]:
        trainer = getattr(self, "trainer", None)  # its world size is known before the process group exists
        return (getattr(self, "batch_size", 0), getattr(self, "num_workers", 0),
                trainer.world_size if trainer is not None else None)

    def state_dict(self) -> dict[str, Any]:
        trainer = getattr(self, "trainer", None)
        epoch = trainer.current_epoch if trainer is not None else 0
        return {"train_position": position_state(epoch, batches_done(trainer), *self._loader_settings())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Keep the saved position for the next fit; a checkpoint loaded to validate or test trains nothing."""
        self.resume_position.clear()
        trainer = getattr(self, "trainer", None)
        if trainer is not None and trainer.state.fn != "fit":
            return
        saved = state.get("train_position") or {}
        skip = batches_to_skip(saved, saved.get("epoch"), *self._loader_settings())
        if skip:
            self.resume_position[saved["epoch"]] = skip


class DropsFullPaddingMasks:
    """DataModule mixin: a batch without padding loses its all-True ``attention_mask`` (set to
    ``None``) while still on the CPU, so the encoder runs the attention kernels without the
    key-padding path: the same numbers, faster kernels, and no device sync to find out."""

    def on_before_batch_transfer(self, batch: Any, dataloader_idx: int) -> Any:
        if isinstance(batch, dict):
            for key in ("attention_mask", "rc_attention_mask"):
                if batch.get(key) is not None:
                    batch = dict(batch, **{key: padding_mask_or_none(batch[key])})
        return batch
