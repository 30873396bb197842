"""Signals that stop a run at the next step boundary instead of wherever the main thread is.

The handlers only record the signal; :class:`~bigbird_dna.training.faults.PreemptionCheckpoint`
acts on it at the end of the next training batch (checkpoint, requeue on SLURM, exit 75).

- ``SIGUSR1`` (SLURM's warning before the time limit or at preemption) and ``SIGTERM`` (what
  ``scancel``, ``kill`` and most schedulers send) are recorded whenever they come; during set-up
  they take effect at the first step.
- ``SIGINT`` (Ctrl-C) is recorded during training, with one line saying so; a second Ctrl-C, or
  one outside training, interrupts at once (``KeyboardInterrupt``).
"""

from __future__ import annotations

import logging
import os
import signal
import threading

log = logging.getLogger(__name__)

_pending: int | None = None  # the recorded signal, consumed at the next batch end
_training = False  # inside trainer.fit's batches: SIGINT is deferred to the step boundary


def signal_number(name: str | int) -> int:
    """``"USR1"``, ``"SIGUSR1"`` or a number -> the signal number."""
    if isinstance(name, int):
        return name
    name = name.upper()
    return int(getattr(signal, name if name.startswith("SIG") else f"SIG{name}"))


def pending_signal() -> int | None:
    """The signal recorded since the last :func:`clear_pending`, or None."""
    return _pending


def clear_pending() -> None:
    global _pending
    _pending = None


def set_training(active: bool) -> None:
    """Say whether training batches are running (SIGINT waits for the step boundary only then)."""
    global _training
    _training = active


def _record(signum, frame) -> None:
    global _pending
    if signum == signal.SIGINT:
        if not _training or _pending is not None:
            raise KeyboardInterrupt
        os.write(2, b"\ninterrupted: saving a checkpoint at the end of this step (Ctrl-C again to stop at once)\n")
    _pending = signum


def install_handlers(names: list[str | int]) -> bool:
    """Record ``names`` (signals) from now on; False where impossible (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        log.warning("Not in the main thread: %s will not stop the run at a step boundary.", names)
        return False
    for name in names:
        signal.signal(signal_number(name), _record)
    return True
