"""Hydra callbacks: checks that must run before Hydra creates the output directory."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from bigbird_dna.errors import EXIT_INPUT_ERROR, InputError


def ensure_writable_dir(path: str | Path) -> Path:
    """Create ``path`` if needed and prove it is writable, or raise :class:`InputError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write_test.{os.getpid()}"  # per process: DDP ranks may probe at once
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        raise InputError(f"cannot write to the output directory {path}: {err.strerror or err}. Choose a "
                         "writable one with paths.log_dir=DIR or hydra.run.dir=DIR.") from err
    return path


class CheckOutputDirectory(Callback):
    """Fail with one clear line, before any work starts, when the run or sweep dir is unwritable."""

    def _check(self, path: str) -> None:
        try:
            ensure_writable_dir(path)
        except InputError as err:
            print(f"error: {err}", file=sys.stderr, flush=True)
            sys.exit(EXIT_INPUT_ERROR)

    def on_run_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config.hydra.run.dir)

    def on_multirun_start(self, config: DictConfig, **kwargs) -> None:
        self._check(config.hydra.sweep.dir)
