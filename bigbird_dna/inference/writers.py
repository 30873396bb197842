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
- :class:`~bigbird_dna.inference.tracks.TrackWriter` (in :mod:`bigbird_dna.inference.tracks`): one
  output column as a bedGraph or bigWig track.

Coordinates are 0-based, half-open everywhere.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Callable

import numpy as np
import torch

from bigbird_dna.inference.request import settings_comment
from bigbird_dna.inference.windows import ScanWindow

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
