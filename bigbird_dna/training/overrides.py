"""What to say when Hydra cannot compose ``python -m bigbird_dna.train``'s overrides: the key that
was meant. Hydra's own advice for an unknown key, "add a new key with +key=value", adds a key that
nothing reads; a misspelled or half-written key (``max_steps=20`` for ``trainer.max_steps=20``,
``data.fastaa``) almost always names one the config has, and :func:`suggest` finds it.
"""

from __future__ import annotations

import difflib
from typing import Any

from omegaconf import DictConfig, OmegaConf


def config_keys(cfg: Any, prefix: str = "") -> list[str]:
    """Every dotted key of a composed config (groups and leaves)."""
    keys = []
    if isinstance(cfg, DictConfig):
        for key in cfg.keys():
            path = f"{prefix}{key}"
            keys.append(path)
            keys += config_keys(cfg._get_node(key), f"{path}.")
    return keys


def suggest(key: str, known: list[str]) -> str | None:
    """The known key ``key`` most likely meant: one that ends with it (``max_steps`` ->
    ``trainer.max_steps``), else the closest spelling; None when nothing is close."""
    if key in known:
        return None
    endings = [k for k in known if k.endswith("." + key)]
    if endings:
        return min(endings, key=len)
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.8)
    if close:
        return close[0]
    leaf = key.rsplit(".", 1)[-1]
    close = difflib.get_close_matches(leaf, [k.rsplit(".", 1)[-1] for k in known], n=1, cutoff=0.8)
    matches = [k for k in known if close and k.rsplit(".", 1)[-1] == close[0]]
    return min(matches, key=len) if matches else None


def _reference_config(overrides: list[str]) -> Any:
    """The config composed with the overrides' group choices (``data=promoter_labelled``,
    ``model=hybrid_tiny``, ``+experiment=...``) and none of their keys; the default config when the
    group choices themselves do not compose."""
    from importlib.resources import files

    from hydra import compose, initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    groups = {entry.name for entry in files("bigbird_dna.conf").iterdir() if entry.is_dir()}
    choices = [text for text in overrides if text.partition("=")[0].lstrip("+") in groups]
    for attempt in (choices, []):
        GlobalHydra.instance().clear()
        try:
            with initialize_config_module(version_base="1.3", config_module="bigbird_dna.conf"):
                return compose("train", overrides=attempt)
        except HydraException:
            continue
        finally:
            GlobalHydra.instance().clear()
    raise RuntimeError("the default config does not compose")


def unknown_key_hints(overrides: list[str]) -> list[str]:
    """``"max_steps=20: did you mean trainer.max_steps=20?"`` for each override whose key the
    config (with the overrides' group choices) lacks, or ``"data.x=1: the config has no key
    data.x"`` when no key is close (overrides that add ``+`` or delete ``~`` keys are the user's own)."""
    cfg = _reference_config(overrides)
    known = config_keys(cfg)
    hints = []
    for text in overrides:
        key, sep, value = text.partition("=")
        if not sep or key.startswith(("+", "~", "hydra.")) or "/" in key or "." not in key and key in cfg:
            continue
        if OmegaConf.select(cfg, key, default=_MISSING) is not _MISSING:
            continue
        meant = suggest(key, known)
        hints.append(f"{text}: did you mean {meant}={value}?" if meant is not None
                     else f"{text}: the config has no key {key}")
    return hints


_MISSING = object()
