"""The named phases of a run (decompress, index, splits, tokenizer, fit, baselines, test...): one log
line each when it ends, and its duration kept for ``summary.json``.

A long run must never go silent: every step that can take more than a second on a large genome is
wrapped in :func:`phase`, which logs ``"<name>: <detail> (<seconds> s)"`` on the
``bigbird_dna.phases`` logger (Hydra copies it to the run's ``train.log``) and adds the duration to
a process-wide registry, in the order phases first end. ``train.py`` clears the registry when a run
starts (:func:`reset_phases`) and lists it in the summary (:func:`phase_seconds`), next to the run's
wall time measured from the process start (:func:`process_start`).

This module sits in ``runtime/`` (layer 1) so that ``genome/`` and ``data/`` may time their own
phases: the layers import upward only (``ARCHITECTURE.md``).
"""

from __future__ import annotations

import logging
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

log = logging.getLogger("bigbird_dna.phases")

_seconds: dict[str, float] = {}  # phase name -> total seconds, in the order phases first ended
_IMPORTED = time.monotonic()


class Phase:
    """What :func:`phase` yields: set :attr:`detail` (e.g. bytes written) before the block ends;
    :attr:`started` is the ``time.monotonic()`` at entry."""

    def __init__(self, name: str, detail: str):
        self.name = name
        self.detail = detail
        self.started = time.monotonic()

    def elapsed(self) -> float:
        return time.monotonic() - self.started


@contextmanager
def phase(name: str, detail: str = "", quiet_below: float = 0.0) -> Iterator[Phase]:
    """Time the ``with`` block as phase ``name``; when it ends without an error, log
    ``"<name>: <detail> (<seconds> s)"`` and add its seconds to the registry (a phase that recurs,
    such as ``validate``, adds up).

    Args:
        name: the phase's key in ``summary.json``'s ``phases``.
        detail: what was done; the block may change it through the yielded :class:`Phase`.
        quiet_below: a phase shorter than this many seconds is logged at DEBUG, not INFO (for
            steps that are instant on a small genome and only worth a line when slow).
    """
    current = Phase(name, detail)
    yield current
    seconds = current.elapsed()
    _seconds[name] = _seconds.get(name, 0.0) + seconds
    level = logging.INFO if seconds >= quiet_below else logging.DEBUG
    log.log(level, "%s: %s (%.1f s)", name, current.detail or "done", seconds)


def phase_seconds() -> dict[str, float]:
    """Seconds per phase since the last :func:`reset_phases`, rounded to 0.01 s, in order."""
    return {name: round(seconds, 2) for name, seconds in _seconds.items()}


def reset_phases() -> None:
    """Forget every phase timed so far (a new run in the same process starts clean)."""
    _seconds.clear()


def process_start() -> float:
    """The ``time.monotonic()`` reading at which this process started (from Linux ``/proc``;
    elsewhere, when this module was first imported), so that a run's wall time includes Python's
    start-up and imports."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        age = float(Path("/proc/uptime").read_text().split()[0]) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return _IMPORTED
    return time.monotonic() - max(age, 0.0)


def human_size(amount: float, unit: str = "B") -> str:
    """A size for a log line, with decimal prefixes: ``human_size(3.2e9)`` -> ``"3.2 GB"``,
    ``human_size(1_200_000, "bp")`` -> ``"1.2 Mbp"``."""
    prefixes = ("", "k", "M", "G", "T")
    power = 0
    while abs(amount) >= 1000 and power < len(prefixes) - 1:
        amount, power = amount / 1000, power + 1
    return f"{amount:.0f} {unit}" if power == 0 else f"{amount:.1f} {prefixes[power]}{unit}"


def counted(count: int, noun: str) -> str:
    """``counted(1, "region")`` -> ``"1 region"``, ``counted(1200, "region")`` -> ``"1,200 regions"``."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def run_timing(started: float) -> dict[str, object]:
    """The timing keys of a run's summary: ``seconds``, the wall time since ``started`` (a
    ``time.monotonic()`` reading, e.g. :func:`process_start`), and ``phases``, the seconds of each
    phase timed since the last :func:`reset_phases`."""
    return {"seconds": round(time.monotonic() - started, 2), "phases": phase_seconds()}
