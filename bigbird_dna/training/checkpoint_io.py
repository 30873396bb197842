"""Checkpoints that are whole or absent: written to a temporary file in the same folder, flushed to
disk, then renamed over the final name. A crash or a full disk never leaves a truncated file under a
checkpoint's name, and the earlier checkpoints stay as they were."""

from __future__ import annotations

import os
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from bigbird_dna.runtime.atomic import atomic_file, disk_full_cause, disk_full_error


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning's ``TorchCheckpointIO`` with an atomic, fsynced save (:func:`atomic_file`)."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | os.PathLike,
                        storage_options: Any | None = None) -> None:
        try:
            with atomic_file(path, "wb") as handle:
                torch.save(checkpoint, handle)
        except BaseException as err:
            full = disk_full_cause(err)
            if full is not None:
                raise disk_full_error(path, full, "the checkpoint") from err
            raise


def checkpoint_entry(path: str | os.PathLike, key: str, default: Any = None) -> Any:
    """One top-level entry of a checkpoint (``global_step``, ``hyper_parameters``, ``tokenizer_json``),
    read without loading its tensors: the file is memory-mapped, so only the entry's bytes are read,
    however large the weights and optimizer state (weights only, as every load here)."""
    return torch.load(path, map_location="cpu", weights_only=True, mmap=True).get(key, default)
