"""Train / val / test regions for an annotation task, aligned with MLM pretraining's split.

The regions come from :func:`bigbird_dna.genome.splits.resolve_splits`, so with no record lists
they are exactly those of ``python -m bigbird_dna.train data.fasta=GENOME
data.holdout_fraction=F``: each record keeps ``[0, L(1-2F))`` for train, ``[L(1-2F), L(1-F))`` for
val and ``[L(1-F), L)`` for test (0-based, half-open). A model pretrained that way has never seen
the held-out bases this task evaluates on. With ``val_records``/``test_records``, whole records
are held out instead.

A window belongs to the split whose region holds it entirely; one that crosses a boundary is
dropped. :func:`drop_cross_split_overlaps` then removes any window that still overlaps a window of
another split (none, when every window lies inside one region; kept as a guard).
"""

from __future__ import annotations

import bisect
from typing import Sequence

from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.splits import SPLITS, resolve_splits


def task_splits(record_lengths: dict[str, int], val_records: Sequence[str], test_records: Sequence[str],
                holdout_fraction: float, window_bp: int) -> dict[str, list[Region]]:
    """The regions of each split (see the module docstring); regions shorter than a window are dropped.

    Raises:
        InputError: an unknown record in a list, a bad fraction, or a split with no usable region.
    """
    return resolve_splits(record_lengths, None, list(val_records or []), list(test_records or []),
                          holdout_fraction, min_length=window_bp)


class SplitLocator:
    """Which split's region holds a window entirely (``None`` when it crosses a boundary)."""

    def __init__(self, splits: dict[str, list[Region]]):
        self._by_record: dict[str, list[tuple[int, int, str]]] = {}
        for split, regions in splits.items():
            for region in regions:
                self._by_record.setdefault(region.record, []).append((region.start, region.end, split))
        for regions in self._by_record.values():
            regions.sort()

    def split_of(self, record: str, start: int, end: int) -> str | None:
        """The split whose region holds ``[start, end)`` of ``record``, else ``None``."""
        regions = self._by_record.get(record, [])
        i = bisect.bisect_right(regions, (start, float("inf"), "")) - 1
        if i >= 0:
            lo, hi, split = regions[i]
            if lo <= start and end <= hi:
                return split
        return None


def _merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return [(a, b) for a, b in out]


def overlaps_other_split(windows_by_split: dict[str, list], split: str, window) -> bool:
    """Whether ``window`` (with ``record``, ``start``, ``end``) overlaps a window of another split.
    Slow (no index); for tests and small sets."""
    return any(w.record == window.record and w.start < window.end and window.start < w.end
               for other, ws in windows_by_split.items() if other != split for w in ws)


def drop_cross_split_overlaps(windows_by_split: dict[str, list]) -> tuple[dict[str, list], int]:
    """Remove every window that overlaps a window of another split.

    Args:
        windows_by_split: ``{split: [item with .record, .start, .end]}``.

    Returns:
        ``(kept_by_split, number_dropped)``.
    """
    covered: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for split, items in windows_by_split.items():
        spans: dict[str, list[tuple[int, int]]] = {}
        for item in items:
            spans.setdefault(item.record, []).append((item.start, item.end))
        for record, intervals in spans.items():
            covered[(split, record)] = _merged(intervals)
    kept: dict[str, list] = {}
    dropped = 0
    for split, items in windows_by_split.items():
        kept[split] = []
        for item in items:
            clash = False
            for other in SPLITS:
                if other == split or (other, item.record) not in covered:
                    continue
                intervals = covered[(other, item.record)]
                i = bisect.bisect_left(intervals, (item.end, item.end))
                if i > 0 and intervals[i - 1][1] > item.start:
                    clash = True
                    break
            if clash:
                dropped += 1
            else:
                kept[split].append(item)
    return kept, dropped
