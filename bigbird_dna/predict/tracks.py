"""Genome tracks, merged BED intervals and gzip TSVs from predict's per-window scores.

**Track bins.** A track holds one value per base, so overlapping windows cannot each cover their
whole span. Each window's score is written over its own bin: with ``stride >= window`` (windows do
not overlap) the window itself, ``[start, end)``; with ``stride < window`` the ``stride``-wide bin
centred on the window, ``[centre - stride // 2, centre - stride // 2 + stride)`` with
``centre = (start + end) // 2``. A bin is clipped to its window and to the end of the previous bin
of its record (the end-aligned tail window, a record shorter than the window), and dropped when that
leaves it empty. Bases before the first bin and after the last one (half a window minus half a
stride at each record end) have no value.

**bedGraph** (``PREFIX.bedGraph``): a ``track type=bedGraph`` line with predict's settings, then
``record start end score``, 0-based half-open, sorted by record name then start, non-overlapping;
scores as in the TSV (6 decimals). **bigWig** (``PREFIX.bw``): the same bins, written with pyBigWig
(the optional extra ``[tracks]``), with the record lengths of the FASTA records seen as the
chromosome sizes.

**Merged BED** (``--merge``): windows at or above the threshold that overlap or touch are joined
into one interval with their maximum score, on the strand of its windows when they all agree, else
``.``.
"""

from __future__ import annotations

import gzip
import os
from array import array
from pathlib import Path
from typing import IO

from bigbird_dna.errors import InputError, require_extra

TRACK_SUFFIX = {"bedgraph": ".bedGraph", "bigwig": ".bw"}


def check_track_args(fmt: str, combine: str, strands: tuple[str, ...]) -> None:
    """Refuse a track of per-strand rows (two values per bin), and load pyBigWig early for bigwig
    (a missing extra is an :class:`InputError` before anything is scored)."""
    if fmt not in TRACK_SUFFIX:
        return
    if combine == "per-strand" and len(strands) == 2:
        raise InputError(f"--format {fmt} writes one value per base; --combine per-strand gives two rows per "
                         "window. Use --combine mean or max, or one of --strands + / -.")
    if fmt == "bigwig":
        require_extra("pyBigWig", "tracks", "--format bigwig (a bigWig track)")


def tsv_path(prefix: str | os.PathLike, compressed: bool) -> Path:
    """``PREFIX.tsv``, or ``PREFIX.tsv.gz`` when ``compressed``."""
    return Path(f"{prefix}.tsv.gz" if compressed else f"{prefix}.tsv")


def open_tsv(path: str | os.PathLike, compressed: bool) -> IO[str]:
    """A text handle on ``path``, gzip-compressed when ``compressed``."""
    return gzip.open(path, "wt", compresslevel=6) if compressed else open(path, "w")


class TrackBins:
    """Per-record bins of scored windows (see the module docstring), kept as compact arrays."""

    def __init__(self, window: int, stride: int):
        self.window, self.stride = window, stride
        self.bins: dict[str, tuple[array, array, array]] = {}
        self.sizes: dict[str, int] = {}

    def add(self, record: str, start: int, end: int, score: float) -> None:
        starts, ends, values = self.bins.setdefault(record, (array("q"), array("q"), array("d")))
        self.sizes[record] = max(self.sizes.get(record, 0), end)
        if self.stride < self.window:
            low = (start + end) // 2 - self.stride // 2
            high = low + self.stride
        else:
            low, high = start, end
        low, high = max(low, start, ends[-1] if ends else 0), min(high, end)
        if high > low:
            starts.append(low)
            ends.append(high)
            values.append(score)

    def rows(self):
        """``(record, start, end, score)`` sorted by record name, then start."""
        for record in sorted(self.bins):
            starts, ends, values = self.bins[record]
            for row in zip(starts, ends, values):
                yield (record, *row)


def write_track(path: Path, fmt: str, bins: TrackBins, description: str, name: str | None = None) -> None:
    """``bins`` as a bedGraph or bigWig file at ``path``; a bedGraph's track is called ``name``
    (default: the file's name; give the final one when ``path`` is a temporary file)."""
    if fmt == "bedgraph":
        with open(path, "w") as out:
            out.write(f'track type=bedGraph name="{name or Path(path).name}" description="{description}"\n')
            for record, start, end, score in bins.rows():
                out.write(f"{record}\t{start}\t{end}\t{score:.6f}\n")
        return
    pyBigWig = require_extra("pyBigWig", "tracks", "--format bigwig (a bigWig track)")
    track = pyBigWig.open(str(path), "w")
    try:
        track.addHeader([(record, bins.sizes[record]) for record in sorted(bins.bins)])
        for record in sorted(bins.bins):
            starts, ends, values = bins.bins[record]
            if len(starts):
                track.addEntries([record] * len(starts), list(starts), ends=list(ends), values=list(values))
    finally:
        track.close()


class BedWriter:
    """BED6 rows of above-threshold windows, each on its own or merged (``merge``)."""

    def __init__(self, out: IO[str], merge: bool):
        self.out, self.merge, self.count = out, merge, 0
        self._current: list | None = None

    def add(self, record: str, start: int, end: int, strand: str, score: float) -> None:
        if not self.merge:
            self._write(record, start, end, score, {strand})
            return
        current = self._current
        if current is not None and current[0] == record and start <= current[2]:
            current[1], current[2] = min(current[1], start), max(current[2], end)
            current[3] = max(current[3], score)
            current[4].add(strand)
            return
        self.flush()
        self._current = [record, start, end, score, {strand}]

    def flush(self) -> None:
        if self._current is not None:
            self._write(*self._current)
            self._current = None

    def _write(self, record: str, start: int, end: int, score: float, strands: set[str]) -> None:
        strand = next(iter(strands)) if len(strands) == 1 else "."
        self.out.write(f"{record}\t{start}\t{end}\tpromoter\t{round(score * 1000)}\t{strand}\n")
        self.count += 1
