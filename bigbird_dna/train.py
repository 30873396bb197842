"""``python -m bigbird_dna.train``: compose the Hydra config, build the task, fit, export, summarise.

Examples::

    python -m bigbird_dna.train                                  # MLM on the bundled sample genome
    python -m bigbird_dna.train data.fasta=hg38.fa.gz model=base trainer.max_steps=100000
    python -m bigbird_dna.train ckpt_path=outputs/mlm/runs/X/checkpoints/last.ckpt   # resume

A run directory holds ``config.yaml`` (the composed, resolved config), ``split_manifest.json``,
``tokenizer.json``, ``checkpoints/{last,best-*}.ckpt``, ``logs/metrics.csv``, ``export/`` and
``summary.json``; after a preemption also ``hpc_ckpt_<n>.ckpt`` (see :mod:`bigbird_dna.training.faults`).

Several processes (DDP ranks) may run this for one run directory: Lightning re-runs the command
for each extra local rank, ``srun`` starts one per task. Only rank 0 writes ``config.yaml``, the
manifest, the tokenizer, ``summary.json`` and the export; the other ranks load rank 0's tokenizer.
Resuming: ``ckpt_path=PATH``; ``ckpt_path=last`` takes the newer of ``checkpoints/last.ckpt`` and
the newest ``hpc_ckpt_<n>.ckpt``; with ``ckpt_path`` unset, a run directory holding an
``hpc_ckpt_<n>.ckpt`` (a preempted, requeued run) resumes from the newer of the two as well.

Exit status: 0 done, 2 bad input (:class:`~bigbird_dna.errors.InputError`), 3 NaN/inf loss,
75 preempted (checkpoint saved; requeued when on SLURM).
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
from lightning.pytorch.utilities.exceptions import SIGTERMException
from lightning.pytorch.utilities.model_helpers import is_overridden
from omegaconf import DictConfig, OmegaConf

from bigbird_dna.errors import EXIT_INPUT_ERROR, InputError
from bigbird_dna.evaluation.reference import reference_metrics
from bigbird_dna.hf import write_hf_export
from bigbird_dna.model.model_card import portable_tree
from bigbird_dna.runtime.atomic import disk_full_cause, disk_full_error, ensure_writable_dir, write_text_atomic
from bigbird_dna.runtime.phases import phase, process_start, reset_phases, run_timing
from bigbird_dna.tasks.base import EncoderTask
from bigbird_dna.training.assembly import build, instantiate_all, trainer_kwargs
from bigbird_dna.training.checkpoint_io import AtomicCheckpointIO
from bigbird_dna.training.distributed import multirun_job, register_slurm_resolver
from bigbird_dna.training.export_record import training_record, training_window
from bigbird_dna.training.faults import (
    EXIT_NONFINITE,
    EXIT_PREEMPTED,
    NonFiniteLossError,
    Preempted,
    arm_signal_handlers,
)
from bigbird_dna.training.model_checkpoint import save_final_state
from bigbird_dna.training.overrides import unknown_key_hints
from bigbird_dna.training.progress import show
from bigbird_dna.training.quiet import quiet_lightning
from bigbird_dna.training.resolvers import register_resolvers, to_plain
from bigbird_dna.training.run_record import (
    command_overrides,
    config_record,
    discard_unstarted_run,
    effective_batch_size,
    reconcile_resume,
    refuse_existing_run,
    resolve_checkpoint,
    restore_tokenizer,
)
from bigbird_dna.training.small_sets import apply_small_set_plan, summary_entry

log = logging.getLogger("bigbird_dna.train")
register_resolvers()
register_slurm_resolver()
EXIT_INTERRUPTED = 130  # 128 + SIGINT, the shell's convention


# Each DataLoader worker tokenizes its own batches; a Rust thread pool per worker only oversubscribes
# the cores (and HF tokenizers warns when a process forks after using it).
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _is_main_process() -> bool:
    """Rank 0 of a (possibly not yet started) distributed run: only it writes shared files."""
    return int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", 0))) == 0 and \
        int(os.environ.get("LOCAL_RANK", 0)) == 0


def _test(trainer: L.Trainer, module: EncoderTask, datamodule, checkpoint: str) -> dict[str, float]:
    """Test metrics of ``checkpoint`` on the test split; empty when the task or data has none."""
    if not is_overridden("test_step", module) or not datamodule.has_test_data():
        log.info("no test split to evaluate (task %s)", type(module).__name__)
        return {}
    with phase("test"):
        metrics = trainer.test(module, datamodule=datamodule, ckpt_path=checkpoint, weights_only=True, verbose=False)
    return {k: float(v) for k, v in metrics[0].items()}


def run(cfg: DictConfig, started: float | None = None) -> dict[str, Any]:
    """Train one task as configured; returns the summary (also written to ``summary.json``), whose
    ``seconds`` count from ``started`` (a ``time.monotonic()`` reading; default: now)."""
    started = time.monotonic() if started is None else started
    reset_phases()
    run_dir = Path(cfg.paths.output_dir)
    main = _is_main_process()
    if main:
        ensure_writable_dir(run_dir)
    quiet_lightning()
    callbacks = instantiate_all(cfg.callbacks)
    # Before anything slow: a preemption signal that arrives while the data or the task is being
    # built is then kept for the first step boundary (and is not, by default, fatal).
    arm_signal_handlers(callbacks)
    L.seed_everything(cfg.seed, workers=True)
    ckpt_path = resolve_checkpoint(cfg.ckpt_path, run_dir)
    if ckpt_path:
        cfg = reconcile_resume(cfg, ckpt_path, command_overrides(), cfg.resume.allow_changes)
    elif main:
        refuse_existing_run(run_dir)
    if ckpt_path and main:
        log.info("Resuming from %s", ckpt_path)
        restore_tokenizer(ckpt_path, run_dir)
    if main:
        write_text_atomic(config_record(run_dir), OmegaConf.to_yaml(cfg, resolve=True))

    module, datamodule, tokenizer = build(cfg, run_dir, main, resume_from=ckpt_path)
    loggers = instantiate_all(cfg.logger)
    trainer = L.Trainer(**trainer_kwargs(cfg), callbacks=callbacks, logger=loggers or False,
                        default_root_dir=str(run_dir), plugins=[AtomicCheckpointIO()])
    batch = effective_batch_size(cfg, trainer)
    if batch:
        for logger in trainer.loggers:
            logger.log_hyperparams(batch)
        if main:
            log.info("effective batch size: %(effective_batch_size)d windows per optimizer step = "
                     "%(batch_size_per_device)d per device x %(devices)d devices x %(num_nodes)d nodes x "
                     "%(accumulate_grad_batches)d accumulated batches", batch)
    small_set = apply_small_set_plan(trainer, datamodule, to_plain(cfg.task).get("schedule"), module)
    length = f"to step {trainer.max_steps}" if trainer.max_steps > 0 else f"up to {trainer.max_epochs} epochs"
    with phase("fit", length):
        trainer.fit(module, datamodule=datamodule, ckpt_path=ckpt_path)

    checkpoint = next(c for c in trainer.checkpoint_callbacks if isinstance(c, ModelCheckpoint))
    last = save_final_state(trainer, checkpoint, run_dir)
    best = last if small_set is not None and small_set.keep_last else checkpoint.best_model_path or last
    # An explicit checkpoint: with none, Lightning on SLURM would validate the newest hpc_ckpt_*.
    with phase("validate", f"{'last' if best == last else 'best'} checkpoint {best}"):
        final = trainer.validate(module, datamodule=datamodule, ckpt_path=best, weights_only=True, verbose=False)[0]
    tested = _test(trainer, module, datamodule, best) if cfg.get("test", True) else {}
    summary = {
        "task": cfg.task.name,
        "global_step": trainer.global_step,
        **{k: float(v) for k, v in final.items()},
        **tested,
        **(batch or {}),
        **summary_entry(small_set),
        **module.summary_entries(),
        "best_checkpoint": best,
        "last_checkpoint": last,
        "export": None,
        "run_dir": str(run_dir),
    }
    if trainer.is_global_zero:
        # on one rank only; a CNN that already judged the composition path is scored, not trained again
        summary.update(reference_metrics(datamodule, trainer.strategy.root_device, getattr(module, "judge_cnn", None)))
        # The export: the best checkpoint's weights, read from its file; paths only relative to run_dir.
        weights = module.export_weights(torch.load(best, map_location="cpu", weights_only=True)["state_dict"])
        record = training_record(to_plain(cfg.data), to_plain(cfg.tokenizer), summary, command_overrides(), run_dir,
                                 to_plain(cfg.task))
        task_config = {**to_plain(cfg.task), **module.export_config()}
        if task_config.get("predict_window_bp") is None:  # null, or a task without one (MLM)
            task_config["predict_window_bp"] = training_window(datamodule, tokenizer, module.config.max_input_tokens)
        export_dir = write_hf_export(run_dir / "export", cfg.task.name, weights, module.config.to_dict(), tokenizer,
                                     module.output,
                                     portable_tree(task_config, run_dir),
                                     {"seed": cfg.seed, "global_step": trainer.global_step,
                                      "source_checkpoint": os.path.relpath(best, run_dir), "training": record})
        summary["export"] = str(export_dir)
    summary.update(run_timing(started))  # the whole run, baselines and export included
    if trainer.is_global_zero:
        write_text_atomic(run_dir / "summary.json", json.dumps(summary, indent=2))
        show(module.format_summary(summary))  # on stdout, and in train.log
    return summary


_composed = False  # set once Hydra has composed the config and called main


@hydra.main(version_base="1.3", config_path="pkg://bigbird_dna.conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    """The CLI; returns the task's monitored metric, which a Hydra sweeper can optimise."""
    global _composed
    started = None if _composed else process_start()  # a multirun's later jobs count from their own start
    _composed = True
    logging.raiseExceptions = False  # a log file on a full disk must not print tracebacks
    try:
        with multirun_job(Path(cfg.paths.output_dir)):
            summary = run(cfg, started)
        value = summary.get(cfg.task.monitor)
        return float(value) if value is not None else None
    except InputError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        if _is_main_process():
            discard_unstarted_run(Path(cfg.paths.output_dir))  # a refused start leaves no run directory
        sys.exit(EXIT_INPUT_ERROR)
    except OSError as err:
        if disk_full_cause(err) is None:
            raise
        print(f"error: {disk_full_error(getattr(err, 'filename', '') or cfg.paths.output_dir, err, 'into')}",
              file=sys.stderr, flush=True)
        sys.exit(EXIT_INPUT_ERROR)
    except NonFiniteLossError as err:  # every rank stops at the same step; rank 0 says why
        if _is_main_process():
            print(f"error: {err}", file=sys.stderr, flush=True)
        sys.exit(EXIT_NONFINITE)
    except Preempted as stop:
        if _is_main_process():
            print(str(stop), file=sys.stderr, flush=True)
        sys.exit(EXIT_PREEMPTED)
    except SIGTERMException:  # Lightning stops an evaluation on SIGTERM, before any step boundary
        if _is_main_process():
            print(f"stopped by SIGTERM outside a training step; no new checkpoint. Resume with: python -m "
                  f"bigbird_dna.train ckpt_path=last hydra.run.dir={cfg.paths.output_dir}", file=sys.stderr, flush=True)
        sys.exit(EXIT_PREEMPTED)
    except KeyboardInterrupt:
        if _is_main_process():
            print(f"interrupted. Resume with: python -m bigbird_dna.train ckpt_path=last "
                  f"hydra.run.dir={cfg.paths.output_dir}", file=sys.stderr, flush=True)
        sys.exit(EXIT_INTERRUPTED)

def cli() -> None:
    """``python -m bigbird_dna.train`` and ``bigbird-dna-train``: :func:`main`, with exit status 2
    when Hydra cannot compose the config (an unknown override, a missing config file) instead of
    Hydra's 1, like every other input error. ``--version`` prints the package version."""
    if "--version" in sys.argv[1:]:
        from bigbird_dna.version import __version__

        print(f"bigbird-dna-train {__version__}")
        return
    try:
        main()
    except SystemExit as stop:
        if stop.code == 1 and not _composed:
            hints = unknown_key_hints([arg for arg in sys.argv[1:] if not arg.startswith("-")])
            fix = "; ".join(hints) if hints else "check the spelling of the key Hydra names above."
            print(f"error: the config could not be composed from these overrides: {fix}", file=sys.stderr, flush=True)
            sys.exit(EXIT_INPUT_ERROR)
        raise


if __name__ == "__main__":
    cli()
