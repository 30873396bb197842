"""The files a scan writes, one writer each: every writer takes the scan's rows (:class:`Row`) one at
a time, and is a context manager that completes its file only when the scan ended without error.

- :class:`TableWriter`: a TSV (gzip with ``compressed``) with predict's ``#`` settings line, a
  header, and one line per row formatted by the predictor.
- :class:`ProfileHDF5Writer`: ``record``, ``start``, ``end`` (int64), ``strand``, ``n_fraction``
  (float32), ``profiles [N, C]`` (float32, chunked, gzip), ``label_names``, the settings as
  attributes; rows are appended in blocks, never held all at once.
- :class:`BedHitsWriter`: BED6 rows of windows scoring at or above a threshold, named after the
  output, with the probability times 1000 (rounded) as the score. With ``merge``, windows that
  overlap or touch are joined into one interval with their maximum score, on the strand of its
  windows when they all agree, else ``.``.
- :class:`TrackWriter`: one output column as a bedGraph or bigWig track.

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

Coordinates are 0-based, half-open everywhere.
"""

from __future__ import annotations

import gzip
import os
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

import numpy as np
import torch

from bigbird_dna.errors import InputError, require_extra
from bigbird_dna.inference.request import settings_comment
from bigbird_dna.inference.windows import ScanWindow

TRACK_SUFFIX = {"bedgraph": ".bedGraph", "bigwig": ".bw"}
ROW_FIELDS = ("record", "start", "end", "strand", "n_fraction")
_BLOCK = 1024


@dataclass(frozen=True)
class Row:
    """One output row: bases ``[start, end)`` of ``record`` (a window, or the BED interval it is
    centred on), its strand (``.`` when strands are combined), N share and scores ``[C]``."""

    record: str
    start: int
    end: int
    strand: str
    n_fraction: float
    scores: torch.Tensor
    window: ScanWindow


class RowWriter:
    """Base of the writers: ``with writer: writer.add(row) ...``; :meth:`finish` runs only when the
    block ends without an exception, :meth:`close` always."""

    def add(self, row: Row) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Complete the file (the scan succeeded)."""

    def close(self) -> None:
        """Release open handles."""

    def __enter__(self) -> "RowWriter":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            self.close()


def tsv_path(prefix: str | os.PathLike, compressed: bool) -> Path:
    """``PREFIX.tsv``, or ``PREFIX.tsv.gz`` when ``compressed``."""
    return Path(f"{prefix}.tsv.gz" if compressed else f"{prefix}.tsv")


def open_tsv(path: str | os.PathLike, compressed: bool) -> IO[str]:
    """A text handle on ``path``, gzip-compressed when ``compressed``."""
    return gzip.open(path, "wt", compresslevel=6) if compressed else open(path, "w")


class TableWriter(RowWriter):
    """A TSV: the settings line, ``header`` (columns), then ``line(row)`` for every row."""

    def __init__(self, path: Path, compressed: bool, settings: dict[str, str], header: list[str],
                 line: Callable[[Row], str]):
        self._out = open_tsv(path, compressed)
        self._out.write(settings_comment(settings) + "\t".join(header) + "\n")
        self._line = line
        self.count = 0

    def add(self, row: Row) -> None:
        self._out.write(self._line(row) + "\n")
        self.count += 1

    def close(self) -> None:
        self._out.close()


class ProfileHDF5Writer(RowWriter):
    """Rows of ``(record, start, end, strand, n_fraction, profile [C])`` into an HDF5 file."""

    def __init__(self, path: Path, label_names: list[str], settings: dict[str, str]):
        import h5py

        self._out = h5py.File(path, "w")
        self._rows: list[tuple] = []
        self.count = 0
        text = h5py.string_dtype()
        for name, dtype in zip(ROW_FIELDS, (text, np.int64, np.int64, text, np.float32)):
            self._out.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(_BLOCK,))
        width = len(label_names)
        self._out.create_dataset("profiles", shape=(0, width), maxshape=(None, width), dtype=np.float32,
                                 chunks=(min(_BLOCK, 256), width), compression="gzip")
        self._out.create_dataset("label_names", data=np.array(label_names, dtype=object), dtype=text)
        self._out.attrs.update(settings)

    def add(self, row: Row) -> None:
        self._rows.append((row.record, row.start, row.end, row.strand, row.n_fraction, row.scores.numpy()))
        if len(self._rows) >= _BLOCK:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        total = self.count + len(self._rows)
        for name, values in zip((*ROW_FIELDS, "profiles"), zip(*self._rows)):
            dataset = self._out[name]
            dataset.resize(total, axis=0)
            dataset[self.count:total] = np.stack(values) if name == "profiles" else np.asarray(values)
        self.count, self._rows = total, []

    def finish(self) -> None:
        self._flush()

    def close(self) -> None:
        self._out.close()


class BedHitsWriter(RowWriter):
    """BED6 rows of windows whose ``scores[0]`` is at or above ``threshold`` (see the module docstring)."""

    def __init__(self, path: Path, threshold: float, merge: bool, name: str, track_line: str):
        self._out = open(path, "w")
        self._out.write(track_line)
        self.threshold, self.merge, self.name, self.count = threshold, merge, name, 0
        self._current: list | None = None

    def add(self, row: Row) -> None:
        score = float(row.scores[0])
        if score < self.threshold:
            return
        if not self.merge:
            self._write(row.record, row.start, row.end, score, {row.strand})
            return
        current = self._current
        if current is not None and current[0] == row.record and row.start <= current[2]:
            current[1], current[2] = min(current[1], row.start), max(current[2], row.end)
            current[3] = max(current[3], score)
            current[4].add(row.strand)
            return
        self._flush()
        self._current = [row.record, row.start, row.end, score, {row.strand}]

    def _flush(self) -> None:
        if self._current is not None:
            self._write(*self._current)
            self._current = None

    def _write(self, record: str, start: int, end: int, score: float, strands: set[str]) -> None:
        strand = next(iter(strands)) if len(strands) == 1 else "."
        self._out.write(f"{record}\t{start}\t{end}\t{self.name}\t{round(score * 1000)}\t{strand}\n")
        self.count += 1

    def finish(self) -> None:
        self._flush()

    def close(self) -> None:
        self._out.close()


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
    if fmt == "bedgraph":
        with open(path, "w") as out:
            out.write(f'track type=bedGraph name="{name or Path(path).name}" description="{description}"\n')
            for record, start, end, score in bins.rows():
                out.write(f"{record}\t{start}\t{end}\t{score:.6f}\n")
        return
    pyBigWig = require_extra("pyBigWig", "tracks", "--format bigwig (a bigWig track)")
    track = pyBigWig.open(str(path), "w")
    try:
        records = sorted(bins.bins)
        track.addHeader([(record, bins.sizes[record]) for record in records])
        for record in records:
            starts, ends, values = bins.bins[record]
            if len(starts):
                track.addEntries([record] * len(starts), list(starts), ends=list(ends), values=list(values))
    finally:
        track.close()
