"""What every task's LightningModule shares: the optimizer, the tokenizer inside checkpoints, and
what ``train`` needs to know of a task.

A task is one module in ``bigbird_dna/tasks/`` plus its ``conf/task/NAME.yaml`` (whose
``_target_`` names the class) and a data config whose ``_target_`` is a :attr:`EncoderTask.data_class`.
``train`` instantiates the data, provisions the tokenizer, then instantiates the task with
``model``, ``optim``, the tokenizer and :meth:`data.task_inputs() <task_inputs>`.
"""

from __future__ import annotations

from typing import Any, Callable

import lightning as L

from bigbird_dna.tasks.optim import build_optimizer

# Keys of a conf/task group that describe the run, not the module: train reads them, the
# export records them, the constructor never sees them.
RUN_SETTINGS = ("name", "monitor", "monitor_mode", "predict_window_bp", "schedule")


def summary_table(title: str, rows: list[tuple[str, str]]) -> str:
    """A run's closing lines: a blank line, ``title``, then ``name  value`` rows aligned."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(["", title, *(f"  {k:<{width}}  {v}" for k, v in rows)])


def checkpoint_rows(summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The summary rows of the checkpoint that was tested and exported: the best on validation, or
    the last state when the validation set was too small to choose on (``small_set``), and the
    stretched schedule of a small training set."""
    small = summary.get("small_set") or {}
    rows = []
    if small.get("epochs"):
        rows.append(("small training set", f"{small['train_sequences']} sequences: {small['epochs']} epochs of "
                                           f"{small['steps_per_epoch']} steps (task.schedule.min_steps or "
                                           "small_min_steps)"))
    if small.get("layer_decay") is not None:
        rows.append(("small-set layer decay", f"{small['layer_decay']}  (optim.layer_decay for "
                                              f"{small['train_sequences']} training sequences)"))
    if small.get("encoder_dropout") is not None:
        rows.append(("small-set encoder dropout", f"{small['encoder_dropout']}  (task.schedule.small_encoder_dropout)"))
    if small.get("keep_last"):
        return rows + [("last checkpoint", f"{summary['best_checkpoint']}  (tested and exported: "
                                           f"{small['val_sequences']} validation sequences are too few to choose on)")]
    return rows + [("best checkpoint", summary["best_checkpoint"])]


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a run: every metric of ``summary``."""
    return summary_table("Training finished", [(k, f"{v:.4f}" if isinstance(v, float) else str(v))
                                               for k, v in summary.items()])


class EncoderTask(L.LightningModule):
    """Base of the task modules. Subclasses set ``self.tokenizer_json`` (the tokenizer's JSON text)
    and save ``optim`` among their hyperparameters.

    The tokenizer is embedded in every checkpoint (a plain string, so ``weights_only`` loads work),
    so a resumed or reloaded run always decodes ids the way it was trained.

    Class attributes:
        data_class: the DataModule class (or tuple of classes) this task trains on; ``train``
            refuses any other data config before anything is built.
        format_summary: ``summary dict -> str``, the lines printed at the end of a run.
    """

    tokenizer_json: str | None = None
    data_class: type | tuple[type, ...] = L.LightningDataModule
    format_summary: Callable[[dict[str, Any]], str] = staticmethod(format_summary)

    def configure_optimizers(self):
        return build_optimizer(self, self.hparams.optim, self.trainer.estimated_stepping_batches)

    def export_config(self) -> dict[str, Any]:
        """Plain task settings saved in an export beside the weights (``config.json``'s ``task``)."""
        skip = {"model", "optim", "tokenizer_sha256"}
        return {k: v for k, v in dict(self.hparams).items() if k not in skip}

    def summary_entries(self) -> dict[str, Any]:
        """Keys this task adds to the run's ``summary.json`` (and its closing lines); none by default."""
        return {}

    def export_weights(self, state: dict[str, Any]) -> dict[str, Any]:
        """The weights an export keeps of a checkpoint's ``state_dict``: all of them, unless a task
        trains parts that only training uses."""
        return state

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        checkpoint["tokenizer_json"] = self.tokenizer_json

    def on_load_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        self.tokenizer_json = checkpoint.get("tokenizer_json", self.tokenizer_json)
