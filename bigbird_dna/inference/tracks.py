"""Genome tracks (bedGraph, bigWig): one value per base over 0-based, half-open intervals.

:class:`TrackFile` writes a track as its intervals arrive, in order (contigs in the order given,
starts increasing within each), so a track of any length is written in bounded memory:
``python -m bigbird_dna.score`` and ``python -m bigbird_dna.explain`` stream per-base values into it.
**bedGraph**: a ``track type=bedGraph`` line, then ``record start end value``. **bigWig**: through
pyBigWig (the optional extra ``[tracks]``), with the given contig lengths as chromosome sizes.

``predict`` scores windows, not bases: :class:`TrackWriter` keeps its windows' bins
(:class:`TrackBins`) and writes them sorted at the end.

**Track bins.** A track holds one value per base, so overlapping windows cannot each cover their
whole span. Each window's score is written over its own bin: with ``stride >= window`` (windows do
not overlap) the window itself, ``[start, end)``; with ``stride < window`` the ``stride``-wide bin
centred on the window, ``[centre - stride // 2, centre - stride // 2 + stride)`` with
``centre = (start + end) // 2``. A bin is clipped to its window and to the end of the previous bin
of its record (the end-aligned tail window, a record shorter than the window), and dropped when that
leaves it empty. Bases before the first bin and after the last one (half a window minus half a
stride at each record end) have no value. **bedGraph**: a ``track type=bedGraph`` line with
predict's settings, then ``record start end score``, sorted by record name then start,
non-overlapping; scores as in the TSV. **bigWig**: the same bins, written with pyBigWig (the optional
extra ``[tracks]``), with the record lengths of the FASTA records seen as the chromosome sizes.
"""

from __future__ import annotations

import math
import os
from array import array
from pathlib import Path
from typing import Sequence

from bigbird_dna.errors import InputError, require_extra
from bigbird_dna.inference.writers import Row, RowWriter

TRACK_SUFFIX = {"bedgraph": ".bedGraph", "bigwig": ".bw"}
# A track file's format, by its name's suffix (lower case).
SUFFIX_FORMATS = {".bedgraph": "bedgraph", ".bg": "bedgraph", ".bw": "bigwig", ".bigwig": "bigwig"}
# Intervals buffered before a bigWig write.
_FLUSH = 65536


def track_format(path: str | os.PathLike, option: str = "--out") -> str:
    """``"bedgraph"`` or ``"bigwig"`` by the suffix of ``path``; for bigWig, pyBigWig is loaded
    now, so that a missing extra is refused before anything is computed.

    Raises:
        InputError: another suffix, or bigWig without the ``tracks`` extra.
    """
    fmt = SUFFIX_FORMATS.get(Path(path).suffix.lower())
    if fmt is None:
        raise InputError(f"{option} {path}: end the name in .bedGraph (or .bg) or .bw (or .bigWig).")
    if fmt == "bigwig":
        require_extra("pyBigWig", "tracks", f"{option} .bw (a bigWig track)")
    return fmt


class TrackFile:
    """A bedGraph or bigWig file written as intervals arrive (module docstring); a context manager.

    Args:
        path: the file (give a temporary path, renamed by the caller once complete).
        fmt: ``"bedgraph"`` or ``"bigwig"``.
        sizes: ``{contig: length}`` of every contig the track may hold, in the order their intervals
            will come (a bigWig header needs them first).
        description: the bedGraph track line's description.
        name: the bedGraph track's name (default: the file's name).
        decimals: digits after the point of bedGraph values.
    """

    def __init__(self, path: str | os.PathLike, fmt: str, sizes: dict[str, int], description: str,
                 name: str | None = None, decimals: int = 6):
        self.fmt, self.decimals = fmt, decimals
        self.intervals = 0
        self._pending: tuple[list[str], list[int], list[int], list[float]] = ([], [], [], [])
        if fmt == "bedgraph":
            self._out = open(path, "w")
            self._out.write(f'track type=bedGraph name="{name or Path(path).name}" description="{description}"\n')
        else:
            pyBigWig = require_extra("pyBigWig", "tracks", "a bigWig track")
            self._out = pyBigWig.open(str(path), "w")
            self._out.addHeader(list(sizes.items()))

    def add(self, record: str, start: int, end: int, value: float) -> None:
        """One interval ``[start, end)`` of ``record`` with ``value``; NaN values are skipped."""
        if math.isnan(value):
            return
        self.intervals += 1
        if self.fmt == "bedgraph":
            self._out.write(f"{record}\t{start}\t{end}\t{value:.{self.decimals}f}\n")
            return
        for column, item in zip(self._pending, (record, start, end, value)):
            column.append(item)
        if len(self._pending[0]) >= _FLUSH:
            self._flush()

    def add_bases(self, record: str, start: int, values: Sequence[float]) -> None:
        """Per-base values from ``start``: base ``start + i`` gets ``values[i]`` (NaN: no value)."""
        for offset, value in enumerate(values):
            self.add(record, start + offset, start + offset + 1, float(value))

    def _flush(self) -> None:
        records, starts, ends, values = self._pending
        if records:
            self._out.addEntries(records, starts, ends=ends, values=values)
        self._pending = ([], [], [], [])

    def close(self) -> None:
        if self.fmt == "bigwig":
            self._flush()
        self._out.close()

    def __enter__(self) -> "TrackFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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


class TrackWriter(RowWriter):
    """Column ``column`` of the rows as a bedGraph or bigWig track at ``path``, written at the end;
    scores rounded to ``decimals`` as in the TSV. A bedGraph's track is called ``name`` (give the
    final file name when ``path`` is a temporary file)."""

    def __init__(self, path: Path, fmt: str, window: int, stride: int, column: int, decimals: int,
                 description: str, name: str):
        self.path, self.fmt, self.column, self.decimals = path, fmt, column, decimals
        self.description, self.name = description, name
        self.bins = TrackBins(window, stride)

    def add(self, row: Row) -> None:
        self.bins.add(row.record, row.start, row.end, round(float(row.scores[self.column]), self.decimals))

    def finish(self) -> None:
        write_track(self.path, self.fmt, self.bins, self.description, self.name)


def write_track(path: Path, fmt: str, bins: TrackBins, description: str, name: str | None = None) -> None:
    """``bins`` as a bedGraph or bigWig file at ``path``; a bedGraph's track is called ``name``
    (default: the file's name; give the final one when ``path`` is a temporary file)."""
    sizes = {record: bins.sizes[record] for record in sorted(bins.bins)}
    with TrackFile(path, fmt, sizes, description, name) as track:
        for record, start, end, score in bins.rows():
            track.add(record, start, end, score)
