"""EPDnew promoters -> TSS -> strand-aware windows, random far-from-TSS windows, split assignment.

Coordinates are 0-based and half-open (BED convention) everywhere, and ``start``/``end`` of a window
are always on the forward strand, also for a minus-strand promoter whose sequence is the reverse
complement of ``genome[start:end]``.

**EPDnew BED.** Each line is a 60-bp interval covering TSS-49 .. TSS+10 on the promoter's strand
(column 6). The 0-based TSS base is ``chromStart + 49`` on ``+`` and ``chromEnd - 50`` on ``-``:
the 50th base of the line read in the promoter's orientation. Lines are read through the shared
BED reader (:mod:`bigbird_dna.genome.bed`: plain or gzip, headers and comments skipped); the
width and strand checks are EPDnew's own.

**Windows.** ``upstream_bp`` bases before the TSS and ``downstream_bp`` from it (the TSS base
included), read in the promoter's orientation: the default 5000/3000 gives the paper's 8000-bp
window, TSS-5000 .. TSS+2999. Either way, ``seq[upstream_bp]`` is the TSS base::

    + strand: [tss - upstream_bp, tss + downstream_bp)
    - strand: [tss - downstream_bp + 1, tss + upstream_bp + 1), reverse-complemented
"""

from __future__ import annotations

import bisect
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region, bed_lines
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement

EPDNEW_WIDTH = 60
EPDNEW_TSS_OFFSET = {"+": 49, "-": -50}  # added to chromStart on +, to chromEnd on -
MAX_TRIES_PER_WINDOW = 1000


@dataclass(frozen=True)
class Tss:
    """A transcription start site: the 0-based base ``position`` of ``record`` on ``strand``."""

    record: str
    position: int
    strand: str
    name: str = ""


@dataclass(frozen=True)
class Window:
    """Bases ``[start, end)`` of ``record`` (0-based, half-open, forward strand), read on ``strand``."""

    record: str
    start: int
    end: int
    strand: str
    name: str = ""

    def read(self, genome: GenomeReader) -> str:
        """The window's sequence in its own orientation (reverse complement on ``-``)."""
        seq = genome.fetch(self.record, self.start, self.end)
        return reverse_complement(seq) if self.strand == "-" else seq


def read_epdnew_bed(path: str | os.PathLike) -> list[Tss]:
    """TSSs of an EPDnew BED file (plain or gzip): one per 60-bp line, strand from column 6.

    ``track``/``browser``/``#`` lines and blank lines are skipped.

    Raises:
        InputError: a missing file, a line with fewer than 6 columns, a strand other than ``+``/``-``,
            non-integer coordinates, an interval that is not 60 bp, or no promoter at all.
    """
    sites = []
    for line in bed_lines(path, "promoter BED", "Set data.bed=PATH to an EPDnew BED file."):
        cols = line.fields
        if len(cols) < 6 or cols[5] not in EPDNEW_TSS_OFFSET:
            raise InputError(f"{line.where} is not BED6 with a +/- strand in column 6: {' '.join(cols)!r}. "
                             "EPDnew BED files have chrom, start, end, name, score, strand.")
        record, start, end = line.region()
        if end - start != EPDNEW_WIDTH:
            raise InputError(f"{line.where}: {record}:{start}-{end} is {end - start} bp, but EPDnew promoter "
                             f"lines are {EPDNEW_WIDTH} bp (TSS-49..TSS+10). Export the BED from EPDnew "
                             "unchanged.")
        anchor = start if cols[5] == "+" else end
        sites.append(Tss(record, anchor + EPDNEW_TSS_OFFSET[cols[5]], cols[5], cols[3]))
    if not sites:
        raise InputError(f"{path} holds no promoter lines. Point data.bed at an EPDnew BED file.")
    return sites


def promoter_window(tss: Tss, upstream_bp: int, downstream_bp: int) -> Window:
    """The window of ``upstream_bp`` bases before and ``downstream_bp`` from the TSS, strand-aware."""
    if tss.strand == "+":
        return Window(tss.record, tss.position - upstream_bp, tss.position + downstream_bp, "+", tss.name)
    return Window(tss.record, tss.position - downstream_bp + 1, tss.position + upstream_bp + 1, "-", tss.name)


def check_windows(windows: Sequence[Window], record_lengths: dict[str, int], source: str,
                  skip_out_of_bounds: bool = False) -> list[Window]:
    """Check that every window lies inside the genome.

    Args:
        windows: windows built from ``source`` (a BED path, named in errors).
        record_lengths: contig lengths of the genome FASTA.
        skip_out_of_bounds: drop windows that run past a contig end instead of failing.

    Raises:
        InputError: a contig not in the FASTA (always), or a window past a contig end.
    """
    kept = []
    for window in windows:
        length = record_lengths.get(window.record)
        if length is None:
            raise InputError(f"contig {window.record!r} of {source} (promoter {window.name!r}) is not in the "
                             f"genome FASTA, whose contigs are {', '.join(list(record_lengths)[:10])}. Use the "
                             "FASTA of the same assembly and naming (chr1 vs 1) as the BED.")
        if window.start < 0 or window.end > length:
            if skip_out_of_bounds:
                continue
            raise InputError(f"the window {window.record}:{window.start}-{window.end} of promoter "
                             f"{window.name!r} ({source}) runs past the end of {window.record} (0..{length}, "
                             "0-based half-open). Set data.skip_out_of_bounds=true to drop such promoters, "
                             "or shorten data.upstream_bp/data.downstream_bp.")
        kept.append(window)
    if not kept:
        raise InputError(f"no promoter window of {source} fits inside its contig; shorten the window.")
    return kept


def assign_to_splits(windows: Sequence[Window], splits: dict[str, list[Region]]) -> dict[str, list[Window]]:
    """Put each window in the split whose region holds it entirely; windows across a boundary go nowhere.

    With chromosome holdout every region is a whole record, so nothing is lost; with a fraction
    holdout only windows straddling a split boundary are dropped.
    """
    by_record: dict[str, list[tuple[int, int, str]]] = {}
    for split, regions in splits.items():
        for region in regions:
            by_record.setdefault(region.record, []).append((region.start, region.end, split))
    out: dict[str, list[Window]] = {split: [] for split in splits}
    for window in windows:
        for start, end, split in by_record.get(window.record, ()):
            if start <= window.start and window.end <= end:
                out[split].append(window)
                break
    return out


class FarFromTssSampler:
    """Random windows at least ``min_distance_bp`` away from every TSS, on a random strand.

    Args:
        tss: every known TSS (of all splits: a negative must be far from any promoter).
        window_bp: window length.
        min_distance_bp: no TSS may lie within this many bases of the window.
        max_ambiguous_fraction: windows with more N/IUPAC bases are redrawn.
    """

    def __init__(self, tss: Sequence[Tss], window_bp: int, min_distance_bp: int, max_ambiguous_fraction: float):
        self.window_bp = window_bp
        self.min_distance_bp = min_distance_bp
        self.max_ambiguous_fraction = max_ambiguous_fraction
        self._tss: dict[str, list[int]] = {}
        for site in tss:
            self._tss.setdefault(site.record, []).append(site.position)
        for positions in self._tss.values():
            positions.sort()

    def is_far(self, record: str, start: int, end: int) -> bool:
        """No TSS in ``[start - min_distance_bp, end + min_distance_bp)`` of ``record``."""
        positions = self._tss.get(record, [])
        i = bisect.bisect_left(positions, start - self.min_distance_bp)
        return i == len(positions) or positions[i] >= end + self.min_distance_bp

    def sample(self, genome: GenomeReader, regions: Sequence[Region], count: int,
               rng: np.random.Generator) -> list[Window]:
        """``count`` windows inside ``regions`` (weighted by length)."""
        regions = [r for r in regions if r.length >= self.window_bp]
        if count and not regions:
            raise InputError(f"no split region is as long as one promoter window ({self.window_bp} bp) "
                             "to draw random genomic negatives from.")
        sizes = np.array([r.length - self.window_bp + 1 for r in regions], dtype=np.float64)
        windows: list[Window] = []
        for _ in range(count * MAX_TRIES_PER_WINDOW):
            if len(windows) == count:
                return windows
            region = regions[rng.choice(len(regions), p=sizes / sizes.sum())]
            start = region.start + int(rng.integers(0, region.length - self.window_bp + 1))
            end = start + self.window_bp
            if self.is_far(region.record, start, end) and \
                    ambiguous_fraction(genome.fetch(region.record, start, end)) <= self.max_ambiguous_fraction:
                windows.append(Window(region.record, start, end, "+" if rng.random() < 0.5 else "-", "random"))
        if len(windows) < count:
            raise InputError(f"found only {len(windows)} of {count} random windows at least "
                             f"{self.min_distance_bp} bp from every TSS with at most "
                             f"{self.max_ambiguous_fraction:.0%} N; lower data.negatives.min_tss_distance_bp "
                             "or data.negatives.random_genomic.")
        return windows
