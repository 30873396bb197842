"""Hydra callbacks: checks that must run before Hydra creates the output directory."""

from __future__ import annotations

import sys

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from bigbird_dna.errors import EXIT_INPUT_ERROR, InputError
from bigbird_dna.runtime.atomic import ensure_writable_dir


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
