"""Hydra/OmegaConf glue: resolvers used by ``conf/``, conversion to plain types, and building the
object a config group's ``_target_`` names."""

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


def target_class(node: DictConfig | dict) -> Any:
    """The class (or function) a config group's ``_target_`` names."""
    from hydra.utils import get_object

    return get_object(node["_target_"])


def instantiate(node: DictConfig | dict, *, exclude: tuple[str, ...] = (), **extra: Any) -> Any:
    """Call a config group's ``_target_`` with its resolved settings plus ``extra``.

    Like ``hydra.utils.instantiate`` for one flat node, except that an exception the target raises
    (an :class:`~bigbird_dna.errors.InputError` above all) reaches the caller as it is, not wrapped
    in Hydra's ``InstantiationException``. Keys in ``exclude`` are not passed.
    """
    settings = {k: v for k, v in to_plain(node).items() if k != "_target_" and k not in exclude}
    return target_class(node)(**settings, **extra)
