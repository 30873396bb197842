"""Glue between Hydra, Lightning DDP and SLURM.

- :func:`multirun_job`: lets Lightning's DDP launcher start extra local ranks inside a local Hydra
  multirun (lightning-hydra-template#393), and cleans the process group up between jobs.
- ``${bigbird_dna.slurm_gpus:accelerator,devices}``: the SLURM launcher's ``gpus_per_node``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import torch
from omegaconf import OmegaConf, open_dict, read_write


def _slurm_gpus_per_node(accelerator: Any, devices: Any) -> int | None:
    """``gpus_per_node`` of the SLURM launcher (conf/hydra/launcher/slurm.yaml): ``trainer.devices``,
    or none (no GPU request) when training on CPU."""
    if str(accelerator) == "cpu":
        return None
    if isinstance(devices, (list, tuple)):
        return len(devices)
    return devices if isinstance(devices, int) and devices > 0 else None


def register_slurm_resolver() -> None:
    """Register ``${bigbird_dna.slurm_gpus:...}`` used by ``conf/hydra/launcher/slurm.yaml``."""
    if not OmegaConf.has_resolver("bigbird_dna.slurm_gpus"):
        OmegaConf.register_new_resolver("bigbird_dna.slurm_gpus", _slurm_gpus_per_node)


_DDP_ENV = ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK", "LOCAL_RANK", "WORLD_SIZE")


@contextlib.contextmanager
def multirun_job(run_dir: Path):
    """Run one job of a local Hydra multirun so that DDP works in it, and in the jobs after it.

    Lightning starts local ranks > 0 with this process's command line plus ``hydra.run.dir=<run
    dir>``; in a multirun that would be the whole sweep (``-m`` and every sweep value) and the
    single-run directory (lightning-hydra-template#393). For the job, the command line becomes the
    job's own overrides and the run dir the job's output dir. Afterwards the process group and the
    DDP environment variables Lightning set are removed, so the next job starts its own ranks.
    Does nothing outside a multirun, or where SLURM or torchrun start the ranks.
    """
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        yield
        return
    hydra_cfg = HydraConfig.get()
    saved_argv, saved_dir = list(sys.argv), hydra_cfg.run.dir
    saved_env = {name: os.environ.get(name) for name in _DDP_ENV}
    keep, args = [], iter(sys.argv[1:])
    for arg in args:  # keep --config-path/--config-name/--config-dir (and short forms), drop -m
        if arg in ("-cp", "-cn", "-cd", "--config-path", "--config-name", "--config-dir"):
            keep += [arg, next(args, "")]
        elif arg.startswith(("--config-path=", "--config-name=", "--config-dir=")):
            keep.append(arg)
    sys.argv = [sys.argv[0], *keep, *hydra_cfg.overrides.task]
    with open_dict(hydra_cfg), read_write(hydra_cfg):
        hydra_cfg.run.dir = str(run_dir)
    try:
        yield
    finally:
        sys.argv = saved_argv
        with open_dict(hydra_cfg), read_write(hydra_cfg):
            hydra_cfg.run.dir = saved_dir
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
