"""What every annotation task shares: its labelled windows, settings, positives' checks and the last steps.

A task (:mod:`~bigbird_dna.data.annotation.promoters`, :mod:`~bigbird_dna.data.annotation.splice`)
centres windows on *sites*. A site is a **cut**, the boundary between two bases, given as ``cut``:
the 0-based forward-strand index of the base to the cut's right. Read on a strand, the window holds
``upstream_bp`` bases 5' of the cut and ``downstream_bp`` bases 3' of it, so ``sequence[upstream_bp]``
is the first base after the cut on that strand (:func:`window_at_cut`)::

    + strand: [cut - upstream_bp, cut + downstream_bp)
    - strand: [cut - downstream_bp, cut + upstream_bp), reverse-complemented

A TSS at base ``p`` is the cut 5' of it on its strand: ``p`` on ``+``, ``p + 1`` on ``-``.

Every task then keeps each positive inside one split's region (:mod:`~bigbird_dna.data.annotation.split`),
skips windows with too many ambiguous bases, draws ``round(ratio * positives)`` negatives of each
named kind per split from ``default_rng([seed, split, kind])``, and finishes with
:func:`finish_task` (cross-split guard, a stable order, counts per split and kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterable

import numpy as np

from bigbird_dna.data.annotation.split import SplitLocator, drop_cross_split_overlaps
from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.genome.splits import SPLITS


@dataclass(frozen=True)
class Sample:
    """One labelled window: ``[start, end)`` of ``record`` (0-based, half-open, forward strand),
    ``sequence`` read on ``strand``."""

    sequence: str
    label: int
    record: str
    start: int
    end: int
    strand: str
    kind: str


@dataclass
class TaskData:
    """A built task: ``samples`` per split, the split ``regions`` and a ``report`` for the manifest."""

    samples: dict[str, list[Sample]]
    regions: dict[str, list[Region]]
    report: dict


@dataclass(frozen=True)
class WindowSettings:
    """Settings every task has: the window around its sites, negatives per positive by kind
    (``NEGATIVE_KINDS`` of the subclass), the N filter and the splits. Subclasses give the defaults."""

    upstream_bp: int
    downstream_bp: int
    negatives: dict[str, float]
    max_n_fraction: float = 0.1
    holdout_fraction: float = 0.1
    val_records: tuple[str, ...] = ()
    test_records: tuple[str, ...] = ()

    NEGATIVE_KINDS: ClassVar[tuple[str, ...]] = ()
    MIN_FLANK_BP: ClassVar[tuple[int, int]] = (0, 1)  # the least upstream_bp, downstream_bp that work

    @property
    def window_bp(self) -> int:
        return self.upstream_bp + self.downstream_bp

    def check(self) -> None:
        """Raise :class:`InputError` for settings that cannot work."""
        low_up, low_down = self.MIN_FLANK_BP
        if self.upstream_bp < low_up or self.downstream_bp < low_down:
            raise InputError(f"upstream {self.upstream_bp} / downstream {self.downstream_bp} bp: need upstream >= "
                             f"{low_up} and downstream >= {low_down} (the window must hold the site).")
        unknown = set(self.negatives) - set(self.NEGATIVE_KINDS)
        if unknown:
            raise InputError(f"unknown negative kind(s) {sorted(unknown)}; choose among "
                             f"{', '.join(self.NEGATIVE_KINDS)}.")
        bad = {k: v for k, v in self.negatives.items() if not (isinstance(v, (int, float)) and v >= 0)}
        if bad:
            raise InputError(f"negatives per positive must be numbers >= 0, got {bad}.")
        if not 0 <= self.max_n_fraction <= 1:
            raise InputError(f"max_n_fraction={self.max_n_fraction} must lie in [0, 1].")


def window_at_cut(cut: int, strand: str, upstream_bp: int, downstream_bp: int) -> tuple[int, int]:
    """``[start, end)`` (forward strand) with ``upstream_bp`` bases 5' and ``downstream_bp`` bases 3'
    of ``cut`` on ``strand``; may reach below 0 or past the record's end."""
    if strand == "+":
        return cut - upstream_bp, cut + downstream_bp
    return cut - downstream_bp, cut + upstream_bp


def site_samples(genome: GenomeReader, sites: Iterable[tuple[str, str, int]], settings: WindowSettings,
                 locator: SplitLocator, kind: str) -> tuple[dict[str, list[Sample]], dict[str, int]]:
    """Positive windows (label 1) at ``sites`` ``(record, strand, cut)``, per split.

    Returns:
        ``(samples, dropped)``: ``dropped`` counts windows past a record end (``outside_record``),
        across a split boundary and with more than ``max_n_fraction`` ambiguous bases.
    """
    dropped = {"outside_record": 0, "crossing_split_boundary": 0, "too_many_n": 0}
    out: dict[str, list[Sample]] = {split: [] for split in SPLITS}
    for record, strand, cut in sites:
        start, end = window_at_cut(cut, strand, settings.upstream_bp, settings.downstream_bp)
        if start < 0 or end > genome.record_lengths[record]:
            dropped["outside_record"] += 1
            continue
        split = locator.split_of(record, start, end)
        if split is None:
            dropped["crossing_split_boundary"] += 1
            continue
        seq = genome.fetch(record, start, end)
        if ambiguous_fraction(seq) > settings.max_n_fraction:
            dropped["too_many_n"] += 1
            continue
        out[split].append(Sample(reverse_complement(seq) if strand == "-" else seq, 1, record, start, end, strand,
                                 kind))
    return out, dropped


def require_positives(samples: dict[str, list[Sample]], what: str) -> None:
    """Refuse a train or val split without positives (nothing to learn or to select a model on)."""
    for split in ("train", "val"):
        if not any(s.label for s in samples[split]):
            raise InputError(f"the {split} split holds no {what} window: no site of the annotation lies inside its "
                             "regions. Change --holdout-fraction or the --val-records/--test-records lists.")


NegativeDraw = Callable[[str, str, int, np.random.Generator], tuple[list[Sample], dict]]


def add_negatives(samples: dict[str, list[Sample]], settings: WindowSettings, seed: int, draw: NegativeDraw,
                  progress: Callable[[str], None]) -> dict[str, dict]:
    """Add ``round(ratio * positives)`` negatives of each kind to each split, in place.

    Args:
        draw: ``draw(split, kind, count, rng) -> (samples, stats)``, called once per split and
            kind with a nonzero count; ``rng`` is ``default_rng([seed, split index, kind index])``.

    Returns:
        ``{split: {kind: stats}}``.
    """
    stats: dict[str, dict] = {}
    for s, split in enumerate(SPLITS):
        positives = sum(x.label for x in samples[split])
        stats[split] = {}
        for k, kind in enumerate(settings.NEGATIVE_KINDS):
            count = int(round(settings.negatives.get(kind, 0) * positives))
            if not count:
                continue
            progress(f"{split}: {count} {kind} negatives")
            found, stats[split][kind] = draw(split, kind, count, np.random.default_rng([seed, s, k]))
            samples[split] += found
    return stats


def finish_task(samples: dict[str, list[Sample]], regions: dict[str, list[Region]], report: dict,
                record_order: Iterable[str], kinds: tuple[str, ...]) -> TaskData:
    """Drop windows that overlap another split's (a guard), sort each split by position and kind,
    and count samples per split and kind into ``report["counts"]``."""
    samples, crossing = drop_cross_split_overlaps(samples)
    report.setdefault("dropped", {})["overlapping_another_split"] = crossing
    order = {name: i for i, name in enumerate(record_order)}
    for split in SPLITS:
        samples[split].sort(key=lambda x: (order[x.record], x.start, x.end, x.strand, kinds.index(x.kind)))
    report["counts"] = {split: {kind: sum(x.kind == kind for x in samples[split]) for kind in kinds}
                        for split in SPLITS}
    return TaskData(samples, regions, report)
