"""The training config composed in this process, as ``python -m bigbird_dna.train OVERRIDES`` composes
it, for callers that run :func:`bigbird_dna.train.run` themselves (``python -m bigbird_dna.evaluate``).

The Hydra config of the composition is installed (``HydraConfig``), so the run records its
overrides as a command-line run does; the run directory is ``run_dir`` instead of Hydra's dated one.
"""

from __future__ import annotations

import os
from pathlib import Path

from omegaconf import DictConfig, open_dict

from bigbird_dna.errors import InputError
from bigbird_dna.training.overrides import unknown_key_hints
from bigbird_dna.training.resolvers import register_resolvers


def compose_train_config(overrides: list[str], run_dir: str | os.PathLike,
                         user_overrides: list[str] | None = None) -> DictConfig:
    """``conf/train.yaml`` with ``overrides``, its output directory set to ``run_dir``.

    Args:
        overrides: Hydra overrides (``key=value``, ``group=option``), applied in order.
        run_dir: the run's directory (``paths.output_dir``).
        user_overrides: the part of ``overrides`` a user typed, for the hint of a misspelled key.

    Raises:
        InputError: the overrides do not compose (an unknown key or group option, bad syntax).
    """
    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.errors import HydraException

    register_resolvers()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(version_base="1.3", config_module="bigbird_dna.conf"):
            cfg = compose("train", overrides=list(overrides), return_hydra_config=True)
    except HydraException as err:
        hints = unknown_key_hints(list(user_overrides if user_overrides is not None else overrides))
        cause = "; ".join(hints) if hints else str(err).splitlines()[0]
        raise InputError(f"the config could not be composed from these overrides: {cause}") from None
    HydraConfig.instance().set_config(cfg)
    with open_dict(cfg):
        cfg.paths.output_dir = str(Path(run_dir))
        del cfg.hydra
    return cfg
