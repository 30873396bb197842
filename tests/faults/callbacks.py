"""Test-only Lightning callbacks, added to real runs with ``+callbacks.NAME._target_=...`` overrides."""

from __future__ import annotations

import json
import math
import os
import signal
import signal as signal_module
from pathlib import Path

import torch
from lightning.pytorch.callbacks import Callback


class RecordBatches(Callback):
    """Append one JSON line per training batch to ``<folder>/rank<R>.jsonl``: the global step after
    the batch, its epoch, its windows and its loss."""

    def __init__(self, folder: str):
        self.folder = Path(folder)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        line = {"rank": trainer.global_rank, "step": trainer.global_step, "epoch": trainer.current_epoch,
                "windows": list(batch["windows"]), "index": batch["window_index"].tolist(),
                "loss": float(outputs["loss"])}
        with open(self.folder / f"rank{trainer.global_rank}.jsonl", "a") as out:
            out.write(json.dumps(line) + "\n")


class RecordLabels(Callback):
    """Append one JSON line per training batch of a labelled task to ``path``: the epoch, each
    sequence's token-id sum and label sum (enough to tell batches and their order apart).
    Written as the batch starts, so a stop raised by another callback at its end cannot lose it."""

    def __init__(self, path: str):
        self.path = Path(path)

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = {"epoch": trainer.current_epoch, "ids": batch["input_ids"].sum(1).tolist(),
                "labels": batch["labels"].sum(1).tolist()}
        with open(self.path, "a") as out:
            out.write(json.dumps(line) + "\n")


class SigkillAtStep(Callback):
    """SIGKILL this process once ``step`` optimizer steps are done: no handler, no cleanup."""

    def __init__(self, step: int):
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step >= self.step:
            os.kill(os.getpid(), signal.SIGKILL)


class PoisonHeadBias(Callback):
    """From optimizer step ``step`` on, make the MLM loss NaN (``value="nan"``) or +inf (``"inf"``).

    +inf: every output bias but one is -inf, so the log-probability of any real label is -inf
    while the softmax normaliser stays finite.
    """

    def __init__(self, step: int, value: str):
        self.step = step
        self.value = str(value).lower()  # Hydra parses the overrides `nan` and `inf` as floats

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.global_step != self.step:
            return
        with torch.no_grad():
            bias = pl_module.head.bias
            if self.value == "nan":
                bias.fill_(math.nan)
            else:
                bias.fill_(-math.inf)
                bias[0] = 0.0


class SignalAtStep(Callback):
    """Send ``signal`` to this process once ``step`` optimizer steps are done, like ``scancel --signal``."""

    def __init__(self, step: int, signal: str = "SIGUSR1", rank: int | None = None):
        self.step = step
        self.signal = getattr(signal_module, signal)
        self.rank = rank  # only this global rank signals itself (None: every rank)
        self.sent = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if self.rank is not None and trainer.global_rank != self.rank:
            return
        if trainer.global_step >= self.step and not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.signal)


class FillDiskAtStep(Callback):
    """Once ``step`` optimizer steps are done, fill the file system of ``folder`` with one file,
    leaving ``leave_bytes`` free: the next checkpoint runs out of space."""

    def __init__(self, step: int, folder: str, leave_bytes: int = 4096):
        self.step = step
        self.folder = Path(folder)
        self.leave_bytes = leave_bytes
        self.done = False

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step < self.step or self.done:
            return
        self.done = True
        stats = os.statvfs(self.folder)
        free = stats.f_bavail * stats.f_frsize - self.leave_bytes
        with open(self.folder / "filler.bin", "wb") as out:
            while free > 0:
                chunk = min(free, 1 << 20)
                try:
                    out.write(b"\0" * chunk)
                    out.flush()
                except OSError:
                    break
                free -= chunk


class RecordEncoderSum(Callback):
    """Append ``{"step", "sum"}`` to ``path`` after every training batch: the sum of the encoder's
    parameters once the step's update is applied (or skipped)."""

    def __init__(self, path: str):
        self.path = Path(path)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        total = float(sum(p.detach().double().sum() for p in pl_module.encoder.parameters()))
        with open(self.path, "a") as out:
            out.write(json.dumps({"step": trainer.global_step, "sum": total}) + "\n")


class RecordPinning(Callback):
    """Write ``{"train": pin_memory}`` of the train loader to ``path`` when training starts."""

    def __init__(self, path: str):
        self.path = Path(path)

    def on_train_start(self, trainer, pl_module) -> None:
        loader = trainer.train_dataloader
        self.path.write_text(json.dumps({"train": bool(getattr(loader, "pin_memory", False))}))


class RecordCompositionPath(Callback):
    """Save each rank's composition path (``head.composition``'s state) as training starts, after
    the task fitted it in ``on_fit_start``, to ``<folder>/rank<R>.pt``."""

    def __init__(self, folder: str):
        self.folder = Path(folder)

    def on_train_start(self, trainer, pl_module) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu() for k, v in pl_module.head.composition.state_dict().items()}
        torch.save(state, self.folder / f"rank{trainer.global_rank}.pt")
