"""Checkpoints that are whole or absent: written to a temporary file in the same folder, flushed to
disk, then renamed over the final name. A crash or a full disk never leaves a truncated file under a
checkpoint's name, and the earlier checkpoints stay as they were."""

from __future__ import annotations

import errno
import os
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import atomic_file

# Errors that mean "the disk (or the quota, or the file size limit) is full".
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def disk_full_cause(err: BaseException) -> OSError | None:
    """The out-of-space ``OSError`` behind ``err``, if any (torch.save reports one as a RuntimeError
    whose context is the OSError)."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in DISK_FULL:
            return err
        err = err.__cause__ or err.__context__
    return None


def disk_full_error(path: str | os.PathLike, err: OSError, what: str) -> InputError:
    """The one-line error of a write that ran out of space."""
    return InputError(f"no space left to write {what} {path} ({err.strerror or err}); nothing was written under "
                      "that name and earlier files are intact. Free space (or move the run with hydra.run.dir=...) "
                      "and resume with ckpt_path=last.")


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
