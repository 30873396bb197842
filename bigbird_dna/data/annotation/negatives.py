"""Negative windows of the annotation tasks, each kind named (the ``kind`` column of the output).

- ``background``: genomic windows with no site (a TSS, or a splice site of the task's kind; either
  strand) within ``min_distance_bp`` of them, read on a random strand (promoter and splice tasks);
- ``gene_body``: windows entirely inside a transcript, on its strand, with no TSS (either strand,
  its own included) within ``min_distance_bp``: so they lie downstream of their transcript's TSS;
- ``shuffled``: dinucleotide shuffles of positives (:mod:`~bigbird_dna.data.annotation.shuffle`),
  built in :mod:`~bigbird_dna.data.annotation.promoters`;
- ``decoy``: GT/AG-matched windows for the splice tasks, :mod:`~bigbird_dna.data.annotation.decoys`.

Windows are 0-based, half-open, forward-strand coordinates; a window "at least ``d`` from every
site" has no site position in ``[start - d, end + d)``. Windows with more than ``max_n_fraction``
ambiguous bases are rejected, as are repeats of a window already drawn. Sampling is by rejection
with a bounded number of tries; a shortfall is reported in the stats, not raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from bigbird_dna.data.promoter.epdnew import Window
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement

TRIES_PER_WINDOW = 200


class SiteIndex:
    """Sorted site positions per record (TSS bases, splice cuts; both strands together), for distance
    queries."""

    def __init__(self, sites: Iterable[tuple[str, int]]):
        by_record: dict[str, list[int]] = {}
        for record, position in sites:
            by_record.setdefault(record, []).append(position)
        self._positions = {record: np.array(sorted(set(p)), dtype=np.int64) for record, p in by_record.items()}

    def is_far(self, record: str, start: int, end: int, distance: int) -> bool:
        """No site of ``record`` in ``[start - distance, end + distance)``."""
        positions = self._positions.get(record)
        if positions is None or not len(positions):
            return True
        i = int(np.searchsorted(positions, start - distance, side="left"))
        return i == len(positions) or positions[i] >= end + distance

    def distance(self, record: str, start: int, end: int) -> int:
        """Bases between ``[start, end)`` and its nearest site (0 when one lies inside; a huge number
        when the record has none)."""
        positions = self._positions.get(record)
        if positions is None or not len(positions):
            return 1 << 62
        i = int(np.searchsorted(positions, start, side="left"))
        best = 1 << 62
        if i < len(positions):
            best = 0 if positions[i] < end else int(positions[i] - end + 1)
        if i > 0:
            best = min(best, int(start - positions[i - 1]))
        return best

    def nearest(self, record: str, positions: np.ndarray) -> np.ndarray:
        """``|p - s|`` to the nearest site ``s`` of ``record`` for each of ``positions`` (int64 ``[N]``;
        a huge number when the record has none)."""
        sites = self._positions.get(record)
        out = np.full(len(positions), 1 << 62, dtype=np.int64)
        if sites is None or not len(sites):
            return out
        i = np.searchsorted(sites, positions)
        right = i < len(sites)
        out[right] = sites[i[right]] - positions[right]
        left = i > 0
        out[left] = np.minimum(out[left], positions[left] - sites[i[left] - 1])
        return out


@dataclass
class Draw:
    """Windows drawn for one kind in one split, their sequences, and what was rejected."""

    windows: list[Window] = field(default_factory=list)
    sequences: list[str] = field(default_factory=list)
    requested: int = 0
    rejected: dict[str, int] = field(default_factory=lambda: {"near_site": 0, "too_many_n": 0, "repeat": 0})

    def stats(self) -> dict:
        found = len(self.windows)
        return {"requested": self.requested, "found": found, "shortfall": self.requested - found,
                "rejected": dict(self.rejected)}


def _draw(genome: GenomeReader, candidates: Sequence[tuple[str, int, int, str | None]], count: int, window_bp: int,
          sites: SiteIndex, min_distance_bp: int, max_n_fraction: float, rng: np.random.Generator,
          name: str) -> Draw:
    """Windows inside ``candidates`` (record, lo, hi, strand or None for a random one), chosen with
    probability proportional to the window starts each offers."""
    draw = Draw(requested=count)
    candidates = [c for c in candidates if c[2] - c[1] >= window_bp]
    if not count or not candidates:
        return draw
    sizes = np.array([hi - lo - window_bp + 1 for _, lo, hi, _ in candidates], dtype=np.float64)
    cumulative = np.cumsum(sizes)
    taken: set[tuple[str, int, str]] = set()
    for _ in range(count * TRIES_PER_WINDOW):
        if len(draw.windows) == count:
            break
        pick = rng.random() * cumulative[-1]
        index = int(np.searchsorted(cumulative, pick, side="right"))
        record, lo, hi, strand = candidates[min(index, len(candidates) - 1)]
        start = lo + int(rng.integers(0, hi - lo - window_bp + 1))
        end = start + window_bp
        strand = strand or ("+" if rng.random() < 0.5 else "-")
        if (record, start, strand) in taken:
            draw.rejected["repeat"] += 1
            continue
        if not sites.is_far(record, start, end, min_distance_bp):
            draw.rejected["near_site"] += 1
            continue
        seq = genome.fetch(record, start, end)
        if ambiguous_fraction(seq) > max_n_fraction:
            draw.rejected["too_many_n"] += 1
            continue
        taken.add((record, start, strand))
        draw.windows.append(Window(record, start, end, strand, name))
        draw.sequences.append(reverse_complement(seq) if strand == "-" else seq)
    return draw


def sample_background(genome: GenomeReader, regions: Sequence[Region], count: int, window_bp: int, sites: SiteIndex,
                      min_distance_bp: int, max_n_fraction: float, rng: np.random.Generator) -> Draw:
    """``count`` windows inside ``regions`` (one split's), far from every site, on random strands."""
    candidates = [(r.record, r.start, r.end, None) for r in regions]
    return _draw(genome, candidates, count, window_bp, sites, min_distance_bp, max_n_fraction, rng, "background")


def gene_body_candidates(transcripts: Iterable, regions: Sequence[Region],
                         min_distance_bp: int) -> list[tuple[str, int, int, str]]:
    """Each transcript's interior at least ``min_distance_bp`` downstream of its own TSS, clipped to
    ``regions``: ``(record, lo, hi, strand)``, forward-strand half-open bounds of where windows may lie."""
    by_record: dict[str, list[Region]] = {}
    for region in regions:
        by_record.setdefault(region.record, []).append(region)
    out = []
    for t in transcripts:
        lo, hi = (t.start + min_distance_bp, t.end) if t.strand == "+" else (t.start, t.end - min_distance_bp)
        for region in by_record.get(t.record, ()):
            a, b = max(lo, region.start), min(hi, region.end)
            if a < b:
                out.append((t.record, a, b, t.strand))
    return sorted(set(out))


def sample_gene_body(genome: GenomeReader, transcripts: Iterable, regions: Sequence[Region], count: int, window_bp: int,
                     sites: SiteIndex, min_distance_bp: int, max_n_fraction: float,
                     rng: np.random.Generator) -> Draw:
    """``count`` windows inside transcripts (and ``regions``), on the transcript's strand, far from
    every TSS."""
    candidates = gene_body_candidates(transcripts, regions, min_distance_bp)
    return _draw(genome, candidates, count, window_bp, sites, min_distance_bp, max_n_fraction, rng, "gene_body")
