"""Tasks: each pairs a LightningModule with its data, selected by ``task=NAME`` (``conf/task/``)."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import lightning as L
from omegaconf import DictConfig

from bigbird_dna.errors import InputError

# task name -> "module:function" building it; imported lazily so one task's deps never load another's.
TASK_BUILDERS = {
    "mlm": "bigbird_dna.tasks.mlm:build",
    "promoter": "bigbird_dna.tasks.promoter:build",
    "chromatin": "bigbird_dna.tasks.chromatin:build",
}


@dataclass
class BuiltTask:
    """Everything ``train`` needs from a task."""

    module: L.LightningModule
    datamodule: L.LightningDataModule
    tokenizer: Any
    format_summary: Callable[[dict], str]
    reference_metrics: dict[str, float] = field(default_factory=dict)


def build_task(cfg: DictConfig, run_dir: Path, is_main_process: bool) -> BuiltTask:
    """Build the task named by ``cfg.task.name``."""
    target = TASK_BUILDERS.get(cfg.task.name)
    if target is None:
        raise InputError(f"unknown task {cfg.task.name!r}; choose one of {sorted(TASK_BUILDERS)} (task=NAME).")
    module_name, function = target.split(":")
    return getattr(importlib.import_module(module_name), function)(cfg, run_dir, is_main_process)
