"""``python -m bigbird_dna.train``: compose the Hydra config, build the task, fit, export, summarise.

Examples::

    python -m bigbird_dna.train                                  # MLM on the bundled sample genome
    python -m bigbird_dna.train data.fasta=hg38.fa.gz model=base trainer.max_steps=100000
    python -m bigbird_dna.train ckpt_path=outputs/mlm/runs/X/checkpoints/last.ckpt   # resume

A run directory holds ``config.yaml`` (the composed, resolved config), ``split_manifest.json``,
``tokenizer.json``, ``checkpoints/{last,best-*}.ckpt``, ``logs/metrics.csv``, ``export/`` and
``summary.json``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import hydra
import lightning as L
import torch
from lightning.pytorch.callbacks import ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from bigbird_dna.config import register_resolvers, to_plain
from bigbird_dna.errors import EXIT_INPUT_ERROR, InputError
from bigbird_dna.export import write_export
from bigbird_dna.hydra_callbacks import ensure_writable_dir
from bigbird_dna.tasks import build_task

log = logging.getLogger("bigbird_dna.train")
register_resolvers()
# Each DataLoader worker tokenizes its own batches; a Rust thread pool per worker only oversubscribes
# the cores (and HF tokenizers warns when a process forks after using it).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _is_main_process() -> bool:
    """Rank 0 of a (possibly not yet started) distributed run: only it writes shared files."""
    return int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", 0))) == 0 and \
        int(os.environ.get("LOCAL_RANK", 0)) == 0


def _resolve_ckpt(ckpt_path: str | None, run_dir: Path) -> str | None:
    if not ckpt_path:
        return None
    path = run_dir / "checkpoints" / "last.ckpt" if ckpt_path == "last" else Path(ckpt_path)
    if not path.is_file():
        raise InputError(f"checkpoint not found: {path}. Pass ckpt_path=PATH/last.ckpt, or ckpt_path=last "
                         "together with hydra.run.dir=<the run directory>.")
    return str(path)


def _restore_tokenizer(ckpt_path: str, run_dir: Path) -> None:
    """A resumed run keeps the tokenizer its checkpoint was trained with."""
    target = run_dir / "tokenizer.json"
    if target.exists():
        return
    tokenizer_json = torch.load(ckpt_path, map_location="cpu", weights_only=True).get("tokenizer_json")
    if tokenizer_json:
        target.write_text(tokenizer_json)


def _trainer_kwargs(cfg: DictConfig) -> dict[str, Any]:
    kwargs = to_plain(cfg.trainer)
    if kwargs.get("precision") == "auto":
        kwargs["precision"] = "bf16-mixed" if torch.cuda.is_available() else "32-true"
    return kwargs


def _instantiate_all(group: DictConfig | None) -> list:
    return [hydra.utils.instantiate(node) for node in (group or {}).values() if node is not None]


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Train one task as configured; returns the summary (also written to ``summary.json``)."""
    started = time.monotonic()
    run_dir = Path(cfg.paths.output_dir)
    ensure_writable_dir(run_dir)
    main = _is_main_process()
    L.seed_everything(cfg.seed, workers=True)
    ckpt_path = _resolve_ckpt(cfg.ckpt_path, run_dir)
    if ckpt_path and main:
        _restore_tokenizer(ckpt_path, run_dir)
    if main:
        _write_atomic(run_dir / "config.yaml", OmegaConf.to_yaml(cfg, resolve=True))

    task = build_task(cfg, run_dir, main)
    callbacks = _instantiate_all(cfg.callbacks)
    loggers = _instantiate_all(cfg.logger)
    trainer = L.Trainer(**_trainer_kwargs(cfg), callbacks=callbacks, logger=loggers or False,
                        default_root_dir=str(run_dir))
    trainer.fit(task.module, datamodule=task.datamodule, ckpt_path=ckpt_path)

    checkpoint = next(c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint))
    best = checkpoint.best_model_path or checkpoint.last_model_path
    if best:
        state = torch.load(best, map_location="cpu", weights_only=True)["state_dict"]
        task.module.load_state_dict(state)
    final = trainer.validate(task.module, datamodule=task.datamodule, verbose=False)[0]
    summary = {
        "task": cfg.task.name,
        "global_step": trainer.global_step,
        **{k: float(v) for k, v in final.items()},
        **task.reference_metrics,
        "best_checkpoint": best,
        "last_checkpoint": checkpoint.last_model_path,
        "export": None,
        "run_dir": str(run_dir),
        "seconds": round(time.monotonic() - started, 1),
    }
    if trainer.is_global_zero:
        export_dir = write_export(run_dir / "export", cfg.task.name, task.module.state_dict(),
                                  task.module.config.to_dict(), task.tokenizer,
                                  task_config=to_plain(cfg.task),
                                  metadata={"seed": cfg.seed, "global_step": trainer.global_step,
                                            "source_checkpoint": best})
        summary["export"] = str(export_dir)
        _write_atomic(run_dir / "summary.json", json.dumps(summary, indent=2))
        print(task.format_summary(summary), flush=True)
    return summary


@hydra.main(version_base="1.3", config_path="pkg://bigbird_dna.conf", config_name="train")
def main(cfg: DictConfig) -> None:
    try:
        run(cfg)
    except InputError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(EXIT_INPUT_ERROR)


if __name__ == "__main__":
    main()
