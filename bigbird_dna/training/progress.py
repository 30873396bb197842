"""Progress reporting that suits both a terminal and a SLURM log file.

On a terminal, Lightning's tqdm bar (its metrics read at most twice a second, not at every step:
reading them is a device sync). Elsewhere (a batch job's log), tqdm's carriage-return updates
flood the file (Lightning-AI/pytorch-lightning#6647), so a plain line is printed every few steps:
every ``min(every, max(1, max_steps // 10))`` steps, so a short run shows about ten lines and a
3-step run a line per step, and always at the first and the last step. Validation and test, which
can take minutes on a large held-out set, print a line at least every 30 s
(:class:`~bigbird_dna.runtime.heartbeat.Heartbeat`). Each line is printed as it is, and also
written to the run's log files (``train.log``), so they hold the steps between the phases.
"""

from __future__ import annotations

import logging
import sys
import time

from lightning.pytorch.callbacks import ProgressBar, TQDMProgressBar

from bigbird_dna.runtime.heartbeat import Heartbeat

log = logging.getLogger(__name__)


class LineProgress(ProgressBar):
    """One line per ``every`` training steps (fewer steps apart in a run of under ``10 * every``
    steps), plus the first and the last: step, loss, speed and time left."""

    def __init__(self, every: int = 50):
        super().__init__()
        self.every = max(1, every)
        self._enabled = True
        self._start = 0.0
        self._interval = self.every
        self._first = 1
        self._last_shown = 0  # gradient accumulation ends several batches on one step: show it once
        self._beat: Heartbeat | None = None  # of a validation or test

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def on_train_start(self, trainer, pl_module) -> None:
        self._start = time.monotonic()
        self._first = trainer.global_step + 1  # a resumed run's first step is shown too
        self._last_shown = trainer.global_step
        steps = trainer.max_steps if trainer.max_steps > 0 else trainer.estimated_stepping_batches
        self._interval = min(self.every, max(1, int(steps) // 10)) if steps != float("inf") else self.every

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        step = trainer.global_step
        epoch_end = trainer.max_steps <= 0 and batch_idx + 1 == trainer.num_training_batches
        # each epoch's end, unless epochs are shorter than the interval (a small set's many short epochs)
        last = step == trainer.max_steps or (epoch_end and (trainer.num_training_batches >= self._interval
                                                            or trainer.current_epoch + 1 == trainer.max_epochs))
        due = step % self._interval == 0 or step == self._first or last
        if not self._enabled or not due or step == self._last_shown:
            return
        self._last_shown = step
        elapsed = time.monotonic() - self._start
        rate = (step - self._first + 1) / elapsed if elapsed > 0 else 0.0
        metrics = " ".join(f"{k}={float(v):.4g}" for k, v in self.get_metrics(trainer, pl_module).items()
                           if k != "v_num" and not k.startswith(("val/", "test/")))  # validation lines show those
        if trainer.max_steps > 0:
            left = f"{(trainer.max_steps - step) / rate:.0f}s left" if rate > 0 else "time left unknown"
            show(f"step {step}/{trainer.max_steps} | {rate:.2f} steps/s | {left} | {metrics}")
            return
        # epochs with early stopping: the run ends at the last epoch's last step at the latest
        total = trainer.estimated_stepping_batches
        bound = f"/{int(total)}" if total != float("inf") else ""
        left = f"at most {(total - step) / rate:.0f}s left" if rate > 0 and bound else "time left unknown"
        where = f"epoch {trainer.current_epoch + 1}/{trainer.max_epochs}, batch {batch_idx + 1}/" \
                f"{trainer.num_training_batches}"
        show(f"step {step}{bound} ({where}) | {rate:.2f} steps/s | {left} | {metrics}")

    def _evaluation_start(self, trainer, what: str, batches) -> None:
        self._beat = None
        if self._enabled and not trainer.sanity_checking:
            total = sum(batches) if all(isinstance(b, int) for b in batches) else None
            self._beat = Heartbeat(what, total, "batch", interactive=False, say=show)

    def _evaluation_batch_end(self) -> None:
        if self._beat is not None:
            self._beat.update()

    def _evaluation_end(self) -> None:
        if self._beat is not None:
            self._beat.close(last_line=False)  # the metrics line follows
            self._beat = None

    def on_validation_start(self, trainer, pl_module) -> None:
        self._evaluation_start(trainer, f"validating at step {trainer.global_step}", trainer.num_val_batches)

    def on_validation_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._evaluation_batch_end()

    def on_test_start(self, trainer, pl_module) -> None:
        self._evaluation_start(trainer, "testing", trainer.num_test_batches)

    def on_test_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx=0) -> None:
        self._evaluation_batch_end()

    def on_test_end(self, trainer, pl_module) -> None:
        self._evaluation_end()

    def on_validation_end(self, trainer, pl_module) -> None:
        self._evaluation_end()
        if self._enabled and not trainer.sanity_checking:
            shown = {k: f"{float(v):.4g}" for k, v in trainer.callback_metrics.items() if k.startswith("val/")}
            show(f"validation at step {trainer.global_step}: {shown}")


class ThrottledTQDM(TQDMProgressBar):
    """Lightning's tqdm bar, reading the logged metrics at most every ``metrics_every_s`` seconds.

    Reading them converts GPU tensors to numbers, a device sync; the stock bar does it at every
    step, which stalls the host's run-ahead of the GPU. The step count still moves every step, and
    fresh metrics are read after every validation and at the end of each epoch.
    """

    def __init__(self, metrics_every_s: float = 0.5, **kwargs):
        super().__init__(**kwargs)
        self.metrics_every_s = metrics_every_s
        self._metrics: dict | None = None
        self._read_at = 0.0

    def get_metrics(self, trainer, pl_module) -> dict:
        now = time.monotonic()
        if self._metrics is None or now - self._read_at >= self.metrics_every_s:
            self._metrics, self._read_at = super().get_metrics(trainer, pl_module), now
        return self._metrics

    def _refresh(self) -> None:
        self._metrics = None

    def on_validation_end(self, trainer, pl_module) -> None:
        self._refresh()
        super().on_validation_end(trainer, pl_module)

    def on_train_epoch_end(self, trainer, pl_module) -> None:
        self._refresh()
        super().on_train_epoch_end(trainer, pl_module)


def show(line: str) -> None:
    """``line`` on stdout, unchanged, and as an INFO record in every log file of the root logger
    (Hydra's ``train.log``); not through the console handler, which would print it twice."""
    print(line, flush=True)
    record = log.makeRecord(log.name, logging.INFO, __file__, 0, line, None, None)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler) and record.levelno >= handler.level:
            handler.handle(record)


def progress_bar(log_every_n_steps: int = 50, interactive: bool | None = None,
                 enabled: bool = True) -> ProgressBar | None:
    """A tqdm bar on a terminal, otherwise :class:`LineProgress`; None when progress output is off
    (``trainer.enable_progress_bar=false``, which Lightning refuses to combine with a bar)."""
    if not enabled:
        return None
    if interactive is None:
        interactive = sys.stderr.isatty()
    return ThrottledTQDM() if interactive else LineProgress(every=max(log_every_n_steps, 50))
