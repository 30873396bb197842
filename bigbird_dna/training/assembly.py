"""What a training run is made of, built from the composed config's ``_target_`` keys: the data,
the run's tokenizer, the task (with its network), the Trainer's arguments, and the objects of the
callback and logger groups."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
import lightning as L
import torch
from omegaconf import DictConfig

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.reference import check_settings as check_baseline_settings
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.export import load_export
from bigbird_dna.runtime.phases import phase
from bigbird_dna.tasks.base import RUN_SETTINGS, EncoderTask
from bigbird_dna.tokenizer.provision import provision_tokenizer
from bigbird_dna.training.checkpoint_io import checkpoint_entry
from bigbird_dna.training.resolvers import instantiate, target_class, to_plain

log = logging.getLogger("bigbird_dna.train")


def trainer_kwargs(cfg: DictConfig) -> dict[str, Any]:
    """The Lightning Trainer's arguments: ``cfg.trainer``, with ``precision: auto`` resolved (bf16 on a GPU)."""
    kwargs = to_plain(cfg.trainer)
    if kwargs.get("precision") == "auto":
        kwargs["precision"] = "bf16-mixed" if torch.cuda.is_available() else "32-true"
    return kwargs


def instantiate_all(group: DictConfig | None) -> list:
    """The objects of a group of ``_target_`` nodes (callbacks, loggers); a target may return None."""
    built = (hydra.utils.instantiate(node) for node in (group or {}).values() if node is not None)
    return [item for item in built if item is not None]


def task_settings(cfg: DictConfig) -> dict[str, Any]:
    """The ``task`` group without its run settings (name, monitor, ...): the constructor's arguments."""
    return {k: v for k, v in to_plain(cfg.task).items() if k not in RUN_SETTINGS and k != "_target_"}


def build(cfg: DictConfig, run_dir: Path, is_main_process: bool, resume_from: str | None = None
          ) -> tuple[EncoderTask, L.LightningDataModule, Any]:
    """The task module, its DataModule and the tokenizer, from the config's ``_target_`` keys.

    Order: check that the data suits the task (before anything is built), build the data, settle
    the tokenizer (:func:`~bigbird_dna.tokenizer.provision.provision_tokenizer`; a ``task.backbone``
    export brings its own, and its encoder config), attach it to the data, build the task.

    A run resumed from checkpoint ``resume_from`` takes a backbone's encoder config from the
    checkpoint, as it takes its weights and tokenizer (already restored in ``run_dir``): the
    backbone export is not read again, so it may have moved or gone since the run started.
    """
    task_class, data_class = target_class(cfg.task), target_class(cfg.data)
    if not issubclass(data_class, task_class.data_class):
        wanted = task_class.data_class if isinstance(task_class.data_class, tuple) else (task_class.data_class,)
        raise InputError(f"task={cfg.task.name} cannot train on {data_class.__name__} (data={cfg.data._target_}); "
                         f"it needs {' or '.join(c.__name__ for c in wanted)}: pick a matching data= config.")
    datamodule = instantiate(cfg.data, seed=cfg.seed, run_dir=str(run_dir), is_main_process=is_main_process)
    check_baseline_settings(datamodule)
    settings = task_settings(cfg)
    backbone = settings.get("backbone")
    resumed = resumed_backbone_settings(resume_from) if backbone and resume_from else None
    export = load_export(backbone) if backbone and resumed is None else None
    if export is not None:
        log.info("fine-tuning from %s: encoder config and tokenizer taken from the export "
                 "(the model= group is not used).", backbone)
    elif resumed is not None:
        log.info("resuming a run that started from %s: its encoder config, tokenizer and weights come from the "
                 "checkpoint (the export is not read again).", backbone)
        settings.update(resumed["settings"])
    with phase("tokenizer", quiet_below=1.0):
        tokenizer = provision_tokenizer(to_plain(cfg.tokenizer), run_dir, is_main_process, datamodule.training_text,
                                        given=export.tokenizer if export else None, given_by=str(backbone))
    model = dict(export.model_config) if export else dict(resumed["model"]) if resumed else to_plain(cfg.model)
    model.update(vocab_size=tokenizer.vocab_size, pad_id=tokenizer.pad_id)
    datamodule.attach_tokenizer(tokenizer, EncoderConfig.from_dict(model).max_input_tokens)
    module = task_class(**settings, model=model, optim=to_plain(cfg.optim),
                        tokenizer_sha256=tokenizer.sha256, tokenizer_json=tokenizer.to_str(),
                        **datamodule.task_inputs())
    if resumed is not None:
        module.hparams["backbone"] = backbone  # the record says where the weights first came from
    return module, datamodule, tokenizer


def resumed_backbone_settings(checkpoint: str) -> dict[str, Any]:
    """What a resumed fine-tune builds from its checkpoint instead of its backbone export: the
    encoder config (``model``) and the task settings that then differ: no backbone to load (the
    checkpoint brings the weights), and the encoder dropout as first resolved."""
    hparams = checkpoint_entry(checkpoint, "hyper_parameters") or {}
    if "model" not in hparams:
        raise InputError(f"{checkpoint} holds no encoder config (hyper_parameters.model); resume from a checkpoint "
                         "of this run (ckpt_path=last).")
    settings = {"backbone": None, **{k: hparams[k] for k in ("encoder_dropout",) if k in hparams}}
    return {"model": dict(hparams["model"]), "settings": settings}
