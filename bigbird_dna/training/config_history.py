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
# modules whose classes and functions moved, as a _target_ names them: old -> new. The Lightning and
# Hydra machinery left runtime/ for training/.
_TRAINING = ("checkpoint_io", "early_stopping", "faults", "hydra_callbacks", "model_checkpoint", "progress",
             "resolvers", "run_record", "distributed", "signals")
MOVED_MODULES: dict[str, str] = {
    **{f"bigbird_dna.runtime.{name}": f"bigbird_dna.training.{name}" for name in _TRAINING},
    "bigbird_dna.tasks.compiled_layers": "bigbird_dna.training.compiled_layers",
}
# _target_ values of classes that moved or were renamed, one by one: old -> new. The MLM and
# class-file modules of data/ went into folders of their own; the annotated promoter DataModule
# builds the splice tasks too, under a name that says so.
MOVED_TARGETS: dict[str, str] = {
    "bigbird_dna.data.mlm.GenomeMLMDataModule": "bigbird_dna.data.mlm.datamodule.GenomeMLMDataModule",
    "bigbird_dna.data.sequence_classes.SequenceClassData": "bigbird_dna.data.classes.datamodule.SequenceClassData",
    "bigbird_dna.data.annotation.datamodule.AnnotatedPromoterData":
        "bigbird_dna.data.annotation.datamodule.AnnotatedTaskData",
}


def _moved(target: str) -> str:
    if target in MOVED_TARGETS:
        return MOVED_TARGETS[target]
    module, _, name = target.rpartition(".")
    return f"{MOVED_MODULES[module]}.{name}" if module in MOVED_MODULES else target


def _upgrade_targets(node: DictConfig) -> None:
    for key, value in node.items():
        if isinstance(value, DictConfig):
            _upgrade_targets(value)
        elif key == "_target_" and isinstance(value, str):
            node[key] = _moved(value)


def upgrade_saved_config(saved: DictConfig) -> DictConfig:
    """``saved`` with :data:`REMOVED_KEYS` dropped and every moved ``_target_`` renamed, in place."""
    with open_dict(saved):
        for key in REMOVED_KEYS:
            parent, _, leaf = key.rpartition(".")
            node = OmegaConf.select(saved, parent)
            if isinstance(node, DictConfig) and leaf in node:
                del node[leaf]
        _upgrade_targets(saved)
    return saved
