"""What the ``config.yaml`` of a run started by an older version says that this version spells
otherwise: a resumed run takes its data, task and model settings from that file
(:mod:`bigbird_dna.training.run_record`), so :func:`upgrade_saved_config` reads it through the
renames and removals below, and runs started before them resume as they were set up.

Each entry says when the key went and why; a saved config holds resolved values, so a key that
moved (``task.mask_prob``) already has its value at the new place (``data.mask_prob``).
"""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf, open_dict

# config paths a constructor no longer takes
REMOVED_KEYS = (
    "task.mask_prob",  # the selection rate belongs to the data, which masks: data.mask_prob holds it
    "data.uppercase",  # could only be true: every tokenizer upper-cases its input
)
# _target_ values of classes that moved to another module: old -> new
MOVED_TARGETS: dict[str, str] = {}


def upgrade_saved_config(saved: DictConfig) -> DictConfig:
    """``saved`` with :data:`REMOVED_KEYS` dropped and :data:`MOVED_TARGETS` renamed, in place."""
    with open_dict(saved):
        for key in REMOVED_KEYS:
            parent, _, leaf = key.rpartition(".")
            node = OmegaConf.select(saved, parent)
            if isinstance(node, DictConfig) and leaf in node:
                del node[leaf]
        for top in ("data", "task"):
            node = saved.get(top)
            if isinstance(node, DictConfig) and node.get("_target_") in MOVED_TARGETS:
                node["_target_"] = MOVED_TARGETS[node["_target_"]]
    return saved
