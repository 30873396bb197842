"""Surviving failures: preemption, non-finite losses, and resuming exactly where a run stopped.

**Preemption (one mechanism: SIGUSR1, checkpoint, ``scontrol requeue``).** SLURM warns a job
before its time limit with ``#SBATCH --signal=USR1@<seconds>`` (to the job steps, i.e. the
``srun`` tasks), at preemption with ``PreemptParameters=send_user_signal``, or on demand with
``scancel --signal=USR1 <job>``. ``train`` arms the signal handlers of its callbacks
(:func:`arm_signal_handlers`) as its first step, before building anything, so a signal that
arrives while the data or the task is being built is not lost; the handler only sets a flag. At
the end of the next training batch, after the optimizer step, all ranks agree on the flag, save
``<run dir>/hpc_ckpt_<n>.ckpt`` (Lightning's name and place for it), rank 0 runs ``scontrol requeue
$SLURM_JOB_ID``, and the run stops with :class:`Preempted` (exit status 75).
SLURM then starts the same command again; ``train`` finds the newest ``hpc_ckpt_*`` in the run
directory and resumes from it. This is Lightning's own ``SLURMEnvironment(auto_requeue=True)``
protocol, with the checkpoint taken at a step boundary: Lightning's handler saves from inside the
signal handler, wherever the main thread happens to be (mid optimizer step, or out of step with
the other DDP ranks, where its barrier can hang). Our handler is installed first, so Lightning's
is not.

**Non-finite loss.** :class:`StopOnNonFiniteLoss` checks every loss before ``backward`` and stops
the run with :class:`NonFiniteLossError` (exit status 3) naming the step, before the bad update
reaches the weights; ``last.ckpt`` stays the last good state.

**Exact resume.** :class:`RNGState` stores the torch (CPU and CUDA), NumPy and Python RNG states
in every checkpoint and restores them when training restarts, so dropout continues as in an
uninterrupted run. The data position is the train loader's own state
(:class:`bigbird_dna.data.loaders.ResumableLoader`).
"""

from __future__ import annotations

import logging
import os
import random
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from lightning.pytorch.callbacks import Callback

from bigbird_dna.training import signals

log = logging.getLogger(__name__)

EXIT_NONFINITE = 3
EXIT_PREEMPTED = 75  # EX_TEMPFAIL: stopped on purpose, to be continued

HPC_CHECKPOINT = re.compile(r"hpc_ckpt_(\d+)\.ckpt$")

class NonFiniteLossError(RuntimeError):
    """The training loss became NaN or infinite; the run stopped before applying that update."""


class Preempted(Exception):
    """The run saved a checkpoint on a preemption signal and stopped (and was requeued, on SLURM)."""

    def __init__(self, message: str, checkpoint: str, requeued: bool):
        super().__init__(message)
        self.checkpoint = checkpoint
        self.requeued = requeued


def hpc_checkpoints(run_dir: str | os.PathLike) -> list[Path]:
    """The preemption checkpoints ``hpc_ckpt_<n>.ckpt`` of a run directory, oldest (lowest n) first."""
    found = [(int(m.group(1)), p) for p in Path(run_dir).glob("hpc_ckpt_*.ckpt")
             if (m := HPC_CHECKPOINT.search(p.name))]
    return [p for _, p in sorted(found)]


def _slurm_job_id() -> str | None:
    array_job = os.environ.get("SLURM_ARRAY_JOB_ID")
    if array_job and os.environ.get("SLURM_ARRAY_TASK_ID"):
        return f"{array_job}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    return os.environ.get("SLURM_JOB_ID")


class PreemptionCheckpoint(Callback):
    """On one of ``signals``: checkpoint at the next batch end, requeue the SLURM job, stop (exit 75).

    Args:
        signals: the signals that stop the run at a step boundary (:mod:`bigbird_dna.training.signals`):
            ``SIGUSR1`` (SLURM's time-limit or preemption warning), ``SIGTERM``, ``SIGINT`` (Ctrl-C).
        requeue: run ``scontrol requeue`` when inside a SLURM job.
    """

    def __init__(self, signals: list[str] = ("SIGUSR1", "SIGTERM", "SIGINT"), requeue: bool = True):
        self.signals = list(signals)
        self.requeue = requeue

    def arm(self) -> None:
        """Install the signal handlers, forgetting a signal an earlier run in this process got."""
        signals.clear_pending()
        signals.install_handlers(self.signals)

    def on_train_start(self, trainer: L.Trainer, pl_module) -> None:
        # Lightning wraps SIGTERM at fit start and would stop the loop itself, before our step
        # boundary and without a checkpoint (exit 0): take the signals back. It restores ours at
        # teardown.
        signals.install_handlers(self.signals)
        signals.set_training(True)

    def on_train_end(self, trainer: L.Trainer, pl_module) -> None:
        signals.set_training(False)

    def on_exception(self, trainer: L.Trainer, pl_module, exception: BaseException) -> None:
        signals.set_training(False)
        if isinstance(exception, KeyboardInterrupt) and trainer.is_global_zero:
            print(f"interrupted at step {trainer.global_step}. Resume with: python -m bigbird_dna.train "
                  f"ckpt_path=last hydra.run.dir={trainer.default_root_dir}", file=sys.stderr, flush=True)

    def on_train_batch_end(self, trainer: L.Trainer, pl_module, outputs, batch, batch_idx) -> None:
        pending = signals.pending_signal() is not None
        if trainer.world_size > 1:  # the signal may reach the ranks at different steps
            pending = trainer.strategy.reduce_boolean_decision(pending, all=False)
        if not pending:
            return
        # Rank 0's signal decides: SIGUSR1 (time limit, preemption) requeues, SIGTERM/SIGINT only stop.
        name = trainer.strategy.broadcast(signal.Signals(signals.pending_signal() or signal.SIGUSR1).name)
        path = trainer.strategy.broadcast(self._next_path(trainer.default_root_dir) if trainer.is_global_zero else None)
        trainer.save_checkpoint(path, weights_only=False)
        requeued, how = self._requeue(name) if trainer.is_global_zero else (False, "")
        requeued, how = trainer.strategy.broadcast((requeued, how))
        signals.clear_pending()
        signals.set_training(False)
        next_step = (f"SLURM requeued job {_slurm_job_id()}: it resumes from that checkpoint by itself."
                     if requeued else
                     f"{how}. Resume with: python -m bigbird_dna.train "
                     f"ckpt_path=last hydra.run.dir={trainer.default_root_dir}")
        raise Preempted(f"stopped by {name} at step {trainer.global_step}: saved {path}. {next_step}",
                        path, requeued)

    @staticmethod
    def _next_path(folder: str) -> str:
        found = hpc_checkpoints(folder)
        number = int(HPC_CHECKPOINT.search(found[-1].name).group(1)) + 1 if found else 1
        return os.path.join(folder, f"hpc_ckpt_{number}.ckpt")

    def _requeue(self, name: str) -> tuple[bool, str]:
        job = _slurm_job_id()
        if name != "SIGUSR1":
            return False, f"{name} asks the run to stop, so nothing was requeued"
        if not self.requeue:
            return False, "Requeueing is off (callbacks.preemption.requeue=false)"
        if not job:
            return False, "Not a SLURM job, so nothing was requeued"
        try:
            result = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as err:
            return False, f"`scontrol requeue {job}` failed: {err}"
        if result.returncode != 0:
            return False, f"`scontrol requeue {job}` failed: {(result.stderr or result.stdout).strip()}"
        log.info("Requeued SLURM job %s", job)
        return True, ""


def arm_signal_handlers(callbacks: list[Callback]) -> None:
    """Install the handlers of the run's :class:`PreemptionCheckpoint` callbacks, now."""
    for callback in callbacks:
        if isinstance(callback, PreemptionCheckpoint):
            callback.arm()


@dataclass
class _PendingFlag:
    """A step's deferred non-finite check: ``flag`` (0-d, on the device), its copy with the loss in
    pinned ``host [2]``, the CUDA event after that copy (None on CPU), and where the step was."""

    flag: torch.Tensor
    host: torch.Tensor
    event: torch.cuda.Event | None
    step: int
    epoch: int
    batch: int


class StopOnNonFiniteLoss(Callback):
    """Stop at the first NaN or infinite training loss, naming its step, without its update.

    Two ways to check, the same outcome:

    - **At once** (any optimizer): the loss is read before ``backward``, one device sync per step.
    - **Deferred** (every optimizer fused, ``optim.fused``: the default on a GPU; no gradient
      scaler): no sync. The step's flag (0-d, 1 = not finite, the max over DDP ranks) goes to each
      optimizer as ``found_inf``, so the fused kernel skips that update on the device, and into
      pinned host memory; it is read when the next step starts, or training ends, by which time it
      is long computed. Under gradient accumulation the flags of a step's batches are combined.
    """

    def __init__(self):
        self._pending: _PendingFlag | None = None

    def on_before_backward(self, trainer: L.Trainer, pl_module, loss: torch.Tensor) -> None:
        if not _fused_without_scaler(trainer):
            bad = not bool(torch.isfinite(loss.detach()).all())
            if trainer.world_size > 1:  # every rank must stop, or the others hang in DDP's all-reduce
                bad = trainer.strategy.reduce_boolean_decision(bad, all=False)
            if bad:
                self._stop(trainer, loss.detach().float().sum().item(), trainer.global_step,
                           trainer.current_epoch, trainer.fit_loop.epoch_loop.batch_idx + 1)
            return
        step = trainer.global_step
        bad = (~torch.isfinite(loss.detach())).any().float()  # 0-d, on the loss's device
        if trainer.world_size > 1:
            torch.distributed.all_reduce(bad, op=torch.distributed.ReduceOp.MAX)  # enqueued, no sync
        if self._pending is not None and self._pending.step == step:  # another batch of the same step
            bad = torch.maximum(bad, self._pending.flag)
        for optimizer in trainer.optimizers:
            optimizer.found_inf = bad
        values = torch.stack([bad, loss.detach().float().sum()])
        host = torch.empty(2, pin_memory=values.is_cuda)
        host.copy_(values, non_blocking=values.is_cuda)
        event = None
        if values.is_cuda:
            event = torch.cuda.Event()
            event.record()
        self._pending = _PendingFlag(bad, host, event, step, trainer.current_epoch,
                                     trainer.fit_loop.epoch_loop.batch_idx + 1)

    def on_train_batch_start(self, trainer: L.Trainer, pl_module, batch, batch_idx: int) -> None:
        self._check(trainer)

    def on_train_end(self, trainer: L.Trainer, pl_module) -> None:
        self._check(trainer)

    def _check(self, trainer: L.Trainer) -> None:
        """Read the deferred flag of the last step (its loss is computed by now: no stall)."""
        pending = self._pending
        if pending is None or pending.step == trainer.global_step:
            return  # nothing pending, or the step's other batches are still to come
        self._pending = None
        if pending.event is not None:
            pending.event.synchronize()
        if pending.host[0].item():
            self._stop(trainer, pending.host[1].item(), pending.step, pending.epoch, pending.batch)

    @staticmethod
    def _stop(trainer: L.Trainer, value: float, step: int, epoch: int, batch: int) -> None:
        what = f"train loss is {value}" if not np.isfinite(value) else "train loss is NaN/inf on another rank"
        last = getattr(trainer.checkpoint_callback, "last_model_path", "") or "none yet"
        raise NonFiniteLossError(
            f"{what} at global step {step} (epoch {epoch}, batch {batch}): training stopped before that "
            f"update. Last good checkpoint: {last}. Lower optim.lr, keep trainer.gradient_clip_val set, or "
            "try trainer.precision=32-true; then resume with ckpt_path=last.")


def _fused_without_scaler(trainer: L.Trainer) -> bool:
    """Whether every optimizer is fused (so it honours ``found_inf``) and no gradient scaler
    (fp16) sets ``found_inf`` itself."""
    optimizers = trainer.optimizers
    return (bool(optimizers) and all(opt.defaults.get("fused") for opt in optimizers)
            and getattr(trainer.precision_plugin, "scaler", None) is None)


class RNGState(Callback):
    """Save the global RNG states with every checkpoint; restore them when training resumes.

    They are restored at ``on_train_start``, after the checkpoint, the model and the dataloaders
    are set up (which is when the uninterrupted run was at the moment of saving, as far as RNG
    use goes: the loaders have their own generators).
    """

    def __init__(self):
        self._to_restore: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        kind, keys, pos, has_gauss, cached = np.random.get_state()
        version, internal, gauss_next = random.getstate()
        state = {
            "torch": torch.get_rng_state(),
            "numpy": [kind, keys.tolist(), int(pos), int(has_gauss), float(cached)],
            "python": [version, list(internal), gauss_next],
        }
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._to_restore = state_dict

    def on_train_start(self, trainer: L.Trainer, pl_module) -> None:
        state, self._to_restore = self._to_restore, None
        if not state:
            return
        torch.set_rng_state(state["torch"])
        kind, keys, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
        version, internal, gauss_next = state["python"]
        random.setstate((version, tuple(internal), gauss_next))
        cuda = state.get("cuda")
        if cuda is not None and torch.cuda.is_available() and len(cuda) == torch.cuda.device_count():
            torch.cuda.set_rng_state_all(cuda)
