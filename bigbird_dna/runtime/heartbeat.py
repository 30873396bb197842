"""Progress that never goes silent: a tqdm bar on a terminal; in a log (stderr not a terminal), a
plain line at most every ``every_s`` seconds (30 by default) and one at the end, so a job's log
shows it is alive at least twice a minute however slow each item is.

One line reads ``<what>: <done>/<total> <unit> (<percent>%, <elapsed> s, about <left> s left)``.
The clock is injectable (``clock=``) so tests can run minutes in no time.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")
EVERY_S = 30.0


class Heartbeat:
    """Count work done; report as the module docstring says.

    Args:
        what: what is being done (``"scoring windows"``).
        total: how much there is, or ``None`` when unknown.
        unit: the unit of the counts (``"window"``).
        enabled: ``False``: no output at all.
        interactive: a tqdm bar; ``None``: when ``stream`` is a terminal.
        every_s: the longest gap between two lines in a log.
        stream: where lines go (stderr).
        clock: seconds, monotonic.
    """

    def __init__(self, what: str, total: int | None = None, unit: str = "item", enabled: bool = True,
                 interactive: bool | None = None, every_s: float = EVERY_S, stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.what, self.total, self.unit, self.enabled, self.every_s = what, total, unit, enabled, every_s
        self.stream = stream or sys.stderr
        self.clock = clock
        self.done = 0
        self._started = self._shown = clock()
        interactive = self.stream.isatty() if interactive is None else interactive
        self._bar = None
        if enabled and interactive:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=what, unit=unit, file=self.stream, dynamic_ncols=True)

    def update(self, count: int = 1) -> None:
        """Add ``count`` items done; a line if the last one is ``every_s`` old."""
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        elif self.enabled and self.clock() - self._shown >= self.every_s:
            self._line()

    def _line(self) -> None:
        now = self.clock()
        elapsed = now - self._started
        text = f"{self.what}: {self.done:,}"
        if self.total:
            left = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
            text += f"/{self.total:,} {self.unit} ({100 * self.done / self.total:.0f}%, {elapsed:.0f} s, about " \
                    f"{left:.0f} s left)"
        else:
            text += f" {self.unit} ({elapsed:.0f} s)"
        print(text, file=self.stream, flush=True)
        self._shown = now

    def close(self) -> None:
        """The last line (in a log), or the bar closed."""
        if self._bar is not None:
            self._bar.close()
        elif self.enabled:
            self._line()

    def __enter__(self) -> "Heartbeat":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def track(self, items: Iterable[T], size: Callable[[T], int] = lambda item: 1) -> Iterator[T]:
        """``items``, counting ``size(item)`` for each one after it has been handled."""
        for item in items:
            yield item
            self.update(size(item))
