"""Inference exports: a self-contained directory that later tasks and ``predict`` load.

Layout of an export directory::

    export/
      model.pt        state_dict only (tensors, incl. the pinned attention layouts): weights_only-safe
      config.json     {"task": ..., "model": EncoderConfig dict, "task_config": {...}, "metadata": {...}}
      tokenizer.json  the exact tokenizer the ids come from

The directory is written under a temporary name and renamed into place
(:func:`~bigbird_dna.runtime.atomic.atomic_directory`), so a crash never leaves a half-written
export that looks valid.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import atomic_directory
from bigbird_dna.runtime.checkpoint_io import disk_full_cause
from bigbird_dna.tokenizer import DNATokenizer

EXPORT_FILES = ("model.pt", "config.json", "tokenizer.json")


@dataclass
class Export:
    """A loaded export: plain config, weights and tokenizer."""

    task: str
    model_config: dict[str, Any]
    task_config: dict[str, Any]
    metadata: dict[str, Any]
    state_dict: dict[str, Any]
    tokenizer: DNATokenizer
    path: Path


def write_export(out_dir: str | os.PathLike, task: str, state_dict: dict[str, Any], model_config: dict,
                 tokenizer: DNATokenizer, task_config: dict | None = None,
                 metadata: dict | None = None) -> Path:
    """Write an export directory atomically and return its path.

    Raises:
        InputError: the folder cannot be written (read-only, under a file) or the disk is full; an
            earlier export at ``out_dir`` is left as it was.
    """
    try:
        with atomic_directory(out_dir) as staging:
            with open(staging / "model.pt", "wb") as handle:  # a Python handle: a full disk is an OSError
                torch.save({k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in state_dict.items()}, handle)
            config = {"task": task, "model": model_config, "task_config": task_config or {},
                      "metadata": {**(metadata or {}), "tokenizer_sha256": tokenizer.sha256}}
            (staging / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
            tokenizer.save(staging / "tokenizer.json")
    except (OSError, RuntimeError) as err:  # torch.save reports a full disk as a RuntimeError
        cause = disk_full_cause(err) or (err if isinstance(err, OSError) else None)
        if cause is None:
            raise
        raise InputError(f"cannot write the export {out_dir}: {cause.strerror or cause}; nothing was written under "
                         "that name (an earlier export there is intact). Free space or write to another folder.") from err
    return Path(out_dir)


def load_export(path: str | os.PathLike, task: str | None = None) -> Export:
    """Load an export directory; with ``task``, refuse an export of another task."""
    path = Path(path)
    missing = [name for name in EXPORT_FILES if not (path / name).is_file()]
    if missing:
        raise InputError(f"{path} is not a bigbird_dna export: missing {', '.join(missing)}. "
                         "Point at the 'export' folder a training run wrote.")
    config = json.loads((path / "config.json").read_text())
    if task is not None and config["task"] != task:
        raise InputError(f"{path} holds a '{config['task']}' model, but a '{task}' model is needed. "
                         f"Train one with task={task}.")
    state = torch.load(path / "model.pt", map_location="cpu", weights_only=True)
    return Export(task=config["task"], model_config=config["model"], task_config=config["task_config"],
                  metadata=config["metadata"], state_dict=state,
                  tokenizer=DNATokenizer.load(path / "tokenizer.json"), path=path)
