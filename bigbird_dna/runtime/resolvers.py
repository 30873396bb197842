"""Hydra/OmegaConf glue: resolvers used by ``conf/`` and conversion to plain types."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf


def sample_genome(name: str) -> str:
    """Path of a genome bundled with the package (``data/`` in the source tree)."""
    return str(Path(str(resources.files("bigbird_dna.sample_data") / name)))


def register_resolvers() -> None:
    """``${bigbird_dna.sample_genome:NAME}`` in configs resolves to a bundled sample genome."""
    if not OmegaConf.has_resolver("bigbird_dna.sample_genome"):
        OmegaConf.register_new_resolver("bigbird_dna.sample_genome", sample_genome)


def to_plain(cfg: DictConfig | Any) -> Any:
    """Resolved config as plain dicts/lists, safe for ``save_hyperparameters`` and weights_only."""
    return OmegaConf.to_container(cfg, resolve=True) if isinstance(cfg, DictConfig) else cfg
