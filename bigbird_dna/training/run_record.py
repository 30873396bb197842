"""A run directory's record is never overwritten, and a resumed run trains on what it started with.

- A new run (no ``ckpt_path``, no preemption checkpoint) refuses a directory that already holds
  one (its ``config.yaml`` or checkpoints): rerunning into it would start over at step 0 and
  overwrite the export and the record.
- A resumed run keeps every setting of the ``config.yaml`` of the run it resumes (the data,
  tokenizer, model, task and seed, and the trainer's length, validation interval and shape, the
  optimizer and its schedule, callbacks, loggers), whatever the defaults are now: the resume
  command the run prints (``ckpt_path=last hydra.run.dir=...``) finishes the run as it was set up.
  What the resume command overrides applies, and the log names it, except that an override that
  changes what the model sees (``data``, ``tokenizer``, ``model``, ``task``, ``seed``, beyond
  :data:`SAFE_KEYS`) is refused, naming the key, unless ``resume.allow_changes=true``. A resume
  whose ``trainer.max_steps`` the checkpoint has already reached is refused with the fix.

It also holds the summary's account of the batch a step saw (:func:`effective_batch_size`); the
summary's timing keys come from :func:`bigbird_dna.runtime.phases.run_timing`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf, open_dict

from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import write_text_atomic
from bigbird_dna.training.checkpoint_io import checkpoint_entry
from bigbird_dna.training.config_history import upgrade_saved_config
from bigbird_dna.training.faults import hpc_checkpoints

if TYPE_CHECKING:
    import lightning as L

log = logging.getLogger(__name__)

PROTECTED = ("data", "tokenizer", "model", "task", "seed")
# Under PROTECTED, but they change neither the windows nor the model: an override may change them
# (a changed batch size or worker count is warned about by the resumed loader).
SAFE_KEYS = ("data.cache_dir", "data.num_workers", "data.batch_size", "task.monitor", "task.monitor_mode",
             "task.predict_window_bp")
# Under PROTECTED, but they name this run's own directory: always this command's value.
RUN_DIR_KEYS = ("task.report_dir",)
# This command's own: where the run is and what it resumes from, never taken from the saved config.
COMMAND_OWN_KEYS = ("paths", "ckpt_path", "resume", "hydra")
# Groups that Hydra packages elsewhere, and groups that may set any key.
GROUP_PATHS = {"attention": "model.attention"}
GLOBAL_GROUPS = ("experiment", "debug")


def holds_a_run(run_dir: Path) -> bool:
    """Whether ``run_dir`` holds a run's work: a checkpoint, an export or a summary. (A run that
    stopped before its first checkpoint, e.g. on bad input, left nothing to lose.)"""
    checkpoints = run_dir / "checkpoints"
    return ((checkpoints.is_dir() and any(checkpoints.iterdir())) or (run_dir / "export").exists()
            or (run_dir / "summary.json").exists())


def refuse_existing_run(run_dir: Path) -> None:
    """Raise :class:`InputError` if a new run would overwrite the one in ``run_dir``."""
    if holds_a_run(run_dir):
        raise InputError(f"{run_dir} already holds a run (checkpoints, export); starting again there would "
                         f"overwrite it. Resume it with ckpt_path=last hydra.run.dir={run_dir}, or start a new run "
                         "in another directory (leave out hydra.run.dir, or give a new one).")


# What a run writes before its first step: a start that failed on bad input left only these.
STARTUP_FILES = frozenset({".hydra", "config.yaml", "train.log", "tokenizer.json", "split_manifest.json",
                           "annotation"})


def discard_unstarted_run(run_dir: Path) -> bool:
    """Remove a run directory that a start refused on bad input left behind (its config, Hydra's
    record and log, the tokenizer or manifest of a start that got that far), so nothing looks like a
    run that never was. Anything else in the folder, or any work of a run, keeps it. True if removed."""
    if not run_dir.is_dir() or holds_a_run(run_dir) or any(p.name not in STARTUP_FILES for p in run_dir.iterdir()):
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True


def saved_config_of(checkpoint: str | Path) -> tuple[Path, DictConfig] | None:
    """``(config.yaml, its content)`` of the run a checkpoint belongs to, or None if not found.

    A checkpoint lives in ``<run>/checkpoints/`` (``last.ckpt``, ``best-*``) or in ``<run>/``
    (``hpc_ckpt_<n>.ckpt``).
    """
    checkpoint = Path(checkpoint).resolve()
    for folder in (checkpoint.parent.parent, checkpoint.parent):
        if (folder / "config.yaml").is_file():
            return folder / "config.yaml", upgrade_saved_config(OmegaConf.load(folder / "config.yaml"))
    return None


def _override_keys(overrides: list[str]) -> list[str]:
    """Config paths that command-line overrides set: ``data.window_bp=1`` -> ``data.window_bp``."""
    keys = []
    for text in overrides:
        key = text.split("=", 1)[0].lstrip("+~")
        keys.append(GROUP_PATHS.get(key, key))
    return keys


def _select(cfg: Any, key: str) -> Any:
    value = OmegaConf.select(cfg, key, default=None)
    return OmegaConf.to_container(value, resolve=True) if isinstance(value, DictConfig) else value


def _without_safe(cfg: DictConfig, top: str) -> Any:
    value = _select(cfg, top)
    for key in (*SAFE_KEYS, *RUN_DIR_KEYS):
        head, _, leaf = key.partition(".")
        if head == top and isinstance(value, dict):
            value.pop(leaf, None)
    return value


def reconcile_resume(cfg: DictConfig, checkpoint: str, overrides: list[str], allow_changes: bool) -> DictConfig:
    """``cfg`` with its protected keys taken from the resumed run's saved config.

    Args:
        cfg: the composed config of this command.
        checkpoint: the checkpoint being resumed.
        overrides: this command's overrides (Hydra's ``overrides.task``).
        allow_changes: keep overrides of protected keys instead of refusing them.

    Raises:
        InputError: the run's config cannot be found, or an override changes a protected key.
    """
    found = saved_config_of(checkpoint)
    if found is None:
        if allow_changes:
            return cfg
        raise InputError(f"cannot find the config.yaml of the run that wrote {checkpoint}, so cannot check that the "
                         "resumed run trains on the same data and model; keep checkpoints inside their run directory, "
                         "or pass resume.allow_changes=true to resume with this command's settings.")
    path, saved = found
    keys = _override_keys(overrides)
    changed = []
    for key in keys:
        top = key.split(".", 1)[0]
        if key in SAFE_KEYS or key in RUN_DIR_KEYS:
            continue
        if top in PROTECTED and _select(cfg, key) != _select(saved, key):
            changed.append(f"{key} ({_select(saved, key)!r} -> {_select(cfg, key)!r})")
        elif top in GLOBAL_GROUPS:
            changed += [f"{key} (changes {t})" for t in PROTECTED if _without_safe(cfg, t) != _without_safe(saved, t)]
    if changed and not allow_changes:
        raise InputError(f"resuming {checkpoint} would change what the model sees: {'; '.join(changed)}. A resumed "
                         f"run keeps the data, tokenizer, model, task and seed of {path}. Drop the override, start a "
                         "new run (no ckpt_path), or pass resume.allow_changes=true if the change is intended.")
    global_group = any(key.split(".", 1)[0] in GLOBAL_GROUPS for key in keys)
    moved = (str(OmegaConf.select(saved, "paths.output_dir") or ""), str(cfg.paths.output_dir))
    with open_dict(cfg):
        for top in saved:
            if top in COMMAND_OWN_KEYS or (global_group and top not in PROTECTED):
                continue  # an experiment or debug group on the command line sets the rest itself
            restored = OmegaConf.create({top: _in_run_dir(_select(saved, top), *moved)})
            for key in [*RUN_DIR_KEYS, *keys]:
                given = top not in PROTECTED or allow_changes or key in SAFE_KEYS or key in RUN_DIR_KEYS
                if key.split(".", 1)[0] == top and given and OmegaConf.select(cfg, key) is not None:
                    OmegaConf.update(restored, key, _select(cfg, key), force_add=True)
            cfg[top] = restored[top]
    overridden = [f"{key}={_select(cfg, key)} (was {_select(saved, key)})" for key in keys
                  if key.split(".", 1)[0] not in COMMAND_OWN_KEYS and _select(cfg, key) != _select(saved, key)]
    if changed:
        log.warning("resuming with changed settings (resume.allow_changes=true): %s", "; ".join(changed))
    log.info("resumed run: every setting taken from %s%s", path,
             f"; overridden by this command: {', '.join(overridden)}" if overridden else "")
    check_steps_left(cfg, checkpoint)
    return cfg


def _in_run_dir(value: Any, old: str, new: str) -> Any:
    """``value`` (plain containers) with paths inside the run directory ``old`` moved into ``new``:
    a run resumed into another directory writes its checkpoints and logs there."""
    if isinstance(value, dict):
        return {key: _in_run_dir(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [_in_run_dir(item, old, new) for item in value]
    if isinstance(value, str) and old and (value == old or value.startswith(old.rstrip("/") + "/")):
        return new + value[len(old):]
    return value


def check_steps_left(cfg: DictConfig, checkpoint: str) -> None:
    """Refuse a resume with nothing left to train: ``trainer.max_steps`` at or below the checkpoint's step."""
    max_steps = OmegaConf.select(cfg, "trainer.max_steps")
    if max_steps is None or max_steps < 0:
        return  # epochs decide
    step = checkpoint_entry(checkpoint, "global_step", 0)
    if max_steps <= step:
        raise InputError(f"{checkpoint} is at step {step}, and this run trains to trainer.max_steps={max_steps}: "
                         f"nothing is left to train. To train on, give trainer.max_steps above {step}; the run's "
                         "export (if it finished) is in its export/ folder.")


def resolve_checkpoint(ckpt_path: str | None, run_dir: Path) -> str | None:
    """The checkpoint to resume from: ``ckpt_path`` (a file, or ``last`` = the newer of
    ``checkpoints/last.ckpt`` and the newest ``hpc_ckpt_<n>.ckpt``), or, unset, a preemption
    checkpoint in ``run_dir``; None for a new run."""
    preempted = hpc_checkpoints(run_dir)
    last = run_dir / "checkpoints" / "last.ckpt"
    if not ckpt_path and not preempted:
        return None
    if not ckpt_path or ckpt_path == "last":
        candidates = [p for p in (last, *preempted[-1:]) if p.is_file()]
        if not candidates:
            raise InputError(f"checkpoint not found: {last}. Pass ckpt_path=PATH/last.ckpt, or ckpt_path=last "
                             "together with hydra.run.dir=<the run directory>.")
        # The newest state wins; on a tie the preemption checkpoint (Lightning's rule for hpc_ckpt).
        return str(max(candidates, key=lambda p: (p.stat().st_mtime, p in preempted)))
    path = Path(ckpt_path)
    if not path.is_file():
        raise InputError(f"checkpoint not found: {path}. Pass ckpt_path=PATH/last.ckpt, or ckpt_path=last "
                         "together with hydra.run.dir=<the run directory>.")
    return str(path)


def restore_tokenizer(ckpt_path: str, run_dir: Path) -> None:
    """A resumed run keeps the tokenizer its checkpoint was trained with."""
    target = run_dir / "tokenizer.json"
    if target.exists():
        return
    tokenizer_json = checkpoint_entry(ckpt_path, "tokenizer_json")
    if tokenizer_json:
        write_text_atomic(target, tokenizer_json)


def command_overrides() -> list[str]:
    """This command's overrides (``key=value``), as Hydra parsed them; none outside a Hydra run."""
    from hydra.core.hydra_config import HydraConfig

    return list(HydraConfig.get().overrides.task) if HydraConfig.initialized() else []


def config_record(run_dir: Path) -> Path:
    """``config.yaml`` for a new run; a resume in place keeps it and adds ``config.resume-<n>.yaml``."""
    if not (run_dir / "config.yaml").exists():
        return run_dir / "config.yaml"
    return run_dir / f"config.resume-{len(list(run_dir.glob('config.resume-*.yaml'))) + 1}.yaml"


def effective_batch_size(cfg: DictConfig, trainer: L.Trainer) -> dict[str, int] | None:
    """Windows per optimizer step: batch_size x devices x num_nodes x accumulate_grad_batches, as
    summary keys; None when the data config has no integer ``batch_size``."""
    per_device = cfg.data.get("batch_size")
    if not isinstance(per_device, int):
        return None
    return {"effective_batch_size": per_device * trainer.world_size * trainer.accumulate_grad_batches,
            "batch_size_per_device": per_device, "devices": trainer.num_devices, "num_nodes": trainer.num_nodes,
            "accumulate_grad_batches": trainer.accumulate_grad_batches}
