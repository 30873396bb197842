"""Progress that never goes silent: a tqdm bar on a terminal; in a log (stderr not a terminal), a
plain line at least every ``every_s`` seconds (30 by default), however long one item takes, and one
at the end, so a job's log shows it is alive at least twice a minute.

One line reads ``<what>: <done>/<total> <unit> (<percent>%, <elapsed> s, about <left> s left)``. In
a log a background thread writes the lines, so a single slow item (a chunk of variants scored in
minutes) still gets them.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import IO, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
EVERY_S = 30.0


class Heartbeat:
    """Count work done; report as the module docstring says. A context manager.

    Args:
        what: what is being done (``"scoring windows"``).
        total: how much there is, or ``None`` when unknown.
        unit: the unit of the counts (``"window"``).
        enabled: ``False``: no output at all.
        interactive: a tqdm bar; ``None``: when ``stream`` is a terminal.
        every_s: the longest gap between two lines in a log (default :data:`EVERY_S`).
        stream: where the bar or the lines go (stderr).
        say: writes a line instead of printing it to ``stream`` (a training run also logs it).
    """

    def __init__(self, what: str, total: int | None = None, unit: str = "item", enabled: bool = True,
                 interactive: bool | None = None, every_s: float | None = None, stream: IO[str] | None = None,
                 say: Callable[[str], None] | None = None):
        self.what, self.total, self.unit, self.enabled = what, total, unit, enabled
        self.every_s = EVERY_S if every_s is None else every_s
        self.stream = stream or sys.stderr
        self.say = say or (lambda line: print(line, file=self.stream, flush=True))
        self.done = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._bar = self._ticker = None
        if not enabled:
            return
        if self.stream.isatty() if interactive is None else interactive:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=what, unit=unit, file=self.stream, dynamic_ncols=True)
        else:
            self._ticker = threading.Thread(target=self._tick, name=f"heartbeat: {what}", daemon=True)
            self._ticker.start()

    def update(self, count: int = 1) -> None:
        """Add ``count`` items done."""
        with self._lock:
            self.done += count
        if self._bar is not None:
            self._bar.update(count)

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self._line()

    def _line(self) -> None:
        with self._lock:
            done = self.done
        elapsed = time.monotonic() - self._started
        text = f"{self.what}: {done:,}"
        units = self.unit if (self.total or done) == 1 else \
            self.unit + ("es" if self.unit.endswith(("ch", "sh", "s", "x")) else "s")
        if self.total:
            left = f"about {elapsed / done * (self.total - done):.0f} s left" if done else "time left unknown"
            text += f"/{self.total:,} {units} ({100 * done / self.total:.0f}%, {elapsed:.0f} s, {left})"
        else:
            text += f" {units} ({elapsed:.0f} s)"
        self.say(text)

    def close(self, last_line: bool = True) -> None:
        """The last line (in a log; not after a failure, whose error is the last word), or the bar closed."""
        if self._bar is not None:
            self._bar.close()
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            if last_line:
                self._line()

    def __enter__(self) -> "Heartbeat":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(last_line=kind is None)

    def track(self, items: Iterable[T], size: Callable[[T], int] = lambda item: 1) -> Iterator[T]:
        """``items``, counting ``size(item)`` for each one after it has been handled."""
        for item in items:
            yield item
            self.update(size(item))
