"""Chromatin predictor of ``python -m bigbird_dna.predict``: the ``num_labels`` (919) profiles of
windows of FASTA files, or of windows centred on the intervals of a BED file.

Input:

- FASTA files (no ``--bed``): sliding windows of ``--window`` bp (default: the training window,
  ``task.predict_window_bp``) every ``--stride`` bp, as :mod:`bigbird_dna.predict.driver` cuts them;
- ``--bed INTERVALS`` with one genome FASTA: one window of ``--window`` bp centred on each interval
  (as in training, :func:`~bigbird_dna.data.chromatin.intervals.centred_window`), padded with N
  past a contig end. Each row reports the interval itself. An interval with a strand (BED column 6,
  ``+`` or ``-``) is scored on that strand only, one row on that strand.

Both strands are scored and averaged by default (strand ``.``; DeepSEA's convention), or reported
one row per strand (``--combine per-strand``). Coordinates are 0-based, half-open.

Output (``--format``):

- ``PREFIX.tsv`` (``PREFIX.tsv.gz`` with ``--gzip``): a ``# bigbird_dna predict key=value ...`` settings line, then the header
  ``record start end strand n_fraction <label names...>``, one probability column per label;
- ``PREFIX.tsv`` and a track of one label, ``--format bedgraph|bigwig --label NAME|INDEX`` (sliding
  windows only): ``PREFIX.bedGraph`` or ``PREFIX.bw``, bins as in :mod:`bigbird_dna.predict.tracks`;
- ``PREFIX.h5``: datasets ``record`` (str), ``start``, ``end`` (int64), ``strand`` (str),
  ``n_fraction`` (float32), ``profiles [N, num_labels]`` (float32, chunked), ``label_names``, and
  the model and window settings as attributes. Rows are appended in blocks, never held all at once.

Both are written under temporary names and renamed at the end: a failed run leaves no file.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Iterator

import h5py
import numpy as np
import torch

from bigbird_dna.data.chromatin.intervals import centred_window, check_intervals, fetch_padded
from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import read_stranded_bed
from bigbird_dna.genome.fasta import Genome, prepare_genome
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.model.export import Export
from bigbird_dna.predict.checks import check_distinct_files, settings, settings_comment
from bigbird_dna.predict.driver import STRAND_CHOICES, Scan, ScanProgress, combine_strands
from bigbird_dna.predict.tiling import ScanWindow, iter_windows
from bigbird_dna.predict.tracks import TRACK_SUFFIX, TrackBins, check_track_args, open_tsv, tsv_path, write_track
from bigbird_dna.runtime.atomic import atomic_paths
from bigbird_dna.tasks.chromatin_report import read_label_names

ROW_FIELDS = ("record", "start", "end", "strand", "n_fraction")
FLAGS = ("bed", "format", "label")  # the task-specific flags this predictor uses
_BLOCK = 1024


def bed_windows(bed: str, fasta: str, window: int,
                strands: tuple[str, ...]) -> tuple[list, list[tuple[str, ...]], Iterator[ScanWindow]]:
    """The intervals of ``bed``, the strands scored for each (its own when the BED gives one, else
    ``strands``) and, lazily, their centred windows on those strands (in BED order)."""
    bins, own = read_stranded_bed(bed)
    plan = [(strand,) if strand else strands for strand in own]
    genome = Genome(prepare_genome(fasta))
    try:
        check_intervals(bins, genome.record_lengths, window, pad_ends=True, source=bed)
    except InputError:
        genome.close()
        raise

    def windows() -> Iterator[ScanWindow]:
        with genome:
            for (record, start, end), interval_strands in zip(bins, plan):
                w_start, w_end = centred_window(start, end, window)
                forward = fetch_padded(genome, record, w_start, w_end)
                n_fraction = ambiguous_fraction(forward)
                for strand in interval_strands:
                    seq = reverse_complement(forward) if strand == "-" else forward
                    yield ScanWindow(record, w_start, w_end, strand, seq, n_fraction)

    return bins, plan, windows()


def interval_rows(scored: Iterator[tuple[ScanWindow, torch.Tensor]], plan: list[tuple[str, ...]],
                  combine: str) -> Iterator[tuple[int, ScanWindow, str, torch.Tensor]]:
    """:func:`~bigbird_dna.predict.driver.combine_strands` per interval: a stranded interval is one
    row on its strand; the others' strands are combined as ``combine`` says."""
    scored = iter(scored)
    for location, strands in enumerate(plan):
        group = [(w, scores.float()) for w, scores in (next(scored) for _ in strands)]
        for _, w, strand, scores in combine_strands(group, strands, combine):
            yield location, w, strand, scores


class ProfileWriter:
    """Rows of ``(record, start, end, strand, n_fraction, profile [C])`` to a TSV or an HDF5 file."""

    def __init__(self, path: Path, fmt: str, label_names: list[str], attrs: dict, compressed: bool = False):
        self.fmt, self.count = fmt, 0
        self._rows: list[tuple] = []
        if fmt == "tsv":
            self._out = open_tsv(path, compressed)
            self._out.write(settings_comment(attrs) + "\t".join((*ROW_FIELDS, *label_names)) + "\n")
            return
        self._out = h5py.File(path, "w")
        text = h5py.string_dtype()
        for name, dtype in zip(ROW_FIELDS, (text, np.int64, np.int64, text, np.float32)):
            self._out.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype, chunks=(_BLOCK,))
        self._out.create_dataset("profiles", shape=(0, len(label_names)), maxshape=(None, len(label_names)),
                                 dtype=np.float32, chunks=(min(_BLOCK, 256), len(label_names)), compression="gzip")
        self._out.create_dataset("label_names", data=np.array(label_names, dtype=object), dtype=text)
        self._out.attrs.update(attrs)

    def add(self, record: str, start: int, end: int, strand: str, n_fraction: float, profile: torch.Tensor) -> None:
        self._rows.append((record, start, end, strand, n_fraction, profile.numpy()))
        if len(self._rows) >= _BLOCK:
            self.flush()

    def flush(self) -> None:
        if not self._rows:
            return
        if self.fmt == "tsv":
            for *fields, profile in self._rows:
                scores = "\t".join(f"{p:.5f}" for p in profile.tolist())
                self._out.write(f"{fields[0]}\t{fields[1]}\t{fields[2]}\t{fields[3]}\t{fields[4]:.4f}\t{scores}\n")
        else:
            columns = list(zip(*self._rows))
            total = self.count + len(self._rows)
            for name, values in zip((*ROW_FIELDS, "profiles"), columns):
                dataset = self._out[name]
                dataset.resize(total, axis=0)
                dataset[self.count:total] = np.stack(values) if name == "profiles" else np.asarray(values)
        self.count += len(self._rows)
        self._rows = []

    def close(self) -> None:
        self.flush()
        self._out.close()


def _label_names(export: Export, num_labels: int) -> list[str]:
    """The label names saved in the export; exports from before they were saved kept the path of
    the training run's ``task.label_names`` file (used if still there); else ``label_<j>``."""
    names = export.task_config.get("label_names")
    if isinstance(names, list) and len(names) == num_labels:
        return [str(name) for name in names]
    if isinstance(names, str) and Path(names).is_file():
        return read_label_names(names, num_labels)
    return [f"label_{j}" for j in range(num_labels)]


def predict(export: Export, args: argparse.Namespace) -> list[Path]:
    """Score ``args.fasta`` (or ``args.bed`` on the genome ``args.fasta``) with a chromatin model."""
    bed, fmt = getattr(args, "bed", None), getattr(args, "format", "tsv")
    compressed = bool(getattr(args, "gzip", False))
    label = getattr(args, "label", None)
    if fmt in TRACK_SUFFIX and (bed or label is None):
        raise InputError(f"--format {fmt} of a chromatin model is the track of one label over sliding windows: "
                         "give --label NAME|INDEX, without --bed.")
    if label is not None and fmt not in TRACK_SUFFIX:
        raise InputError("--label picks the label of a track; add --format bedgraph or bigwig.")
    if fmt in TRACK_SUFFIX:
        check_track_args(fmt, args.combine, STRAND_CHOICES[args.strands])
    if compressed and fmt == "hdf5":
        raise InputError("--gzip compresses the TSV; --format hdf5 is compressed already. Remove --gzip.")
    if bed and len(args.fasta) != 1:
        raise InputError(f"--bed scores intervals on one genome: give exactly one FASTA, not {len(args.fasta)}.")
    if bed and args.stride is not None:
        raise InputError("--stride does not apply with --bed: each interval gets one window centred on it. "
                         "Remove --stride (or --bed, to slide windows over the FASTA).")
    scan = Scan.from_args(export, args)
    num_labels = scan.model.num_labels
    stride = None if bed else args.stride or scan.window
    if bed:
        bins, plan, windows = bed_windows(bed, args.fasta[0], scan.window, scan.strands)
    else:
        check_distinct_files(args.fasta)
        bins, windows = None, iter_windows(args.fasta, scan.window, stride, scan.strands)
    names = _label_names(export, num_labels)
    column = _label_column(label, names) if label is not None else None
    path = Path(f"{args.out_prefix}.h5") if fmt == "hdf5" else tsv_path(args.out_prefix, compressed)
    paths = [path, Path(f"{args.out_prefix}{TRACK_SUFFIX[fmt]}")] if column is not None else [path]
    attrs = settings(args, export, scan.window, stride, bed=bed, format=fmt,
                     label=None if column is None else names[column])
    track = TrackBins(scan.window, stride) if column is not None else None
    started, progress = time.monotonic(), ScanProgress(enabled=not args.no_progress and not bed)
    try:
        with atomic_paths(paths) as temporary:
            writer = ProfileWriter(temporary[0], "hdf5" if fmt == "hdf5" else "tsv", names, attrs, compressed)
            rows = interval_rows(scan.scored(windows, args.batch_size), plan, scan.combine) if bed else \
                scan.rows(windows, args.batch_size)
            try:
                for location, w, strand, scores in rows:
                    progress.advance(w)
                    # a BED row reports its interval; its windows come len(strands) per interval, in order
                    record, start, end = bins[location] if bins else (w.record, w.start, w.end)
                    writer.add(record, start, end, strand, w.n_fraction, scores)
                    if track is not None:
                        track.add(record, start, end, float(f"{float(scores[column]):.5f}"))
            finally:
                writer.close()
            if track is not None:
                write_track(temporary[1], fmt, track, settings_comment(attrs)[2:].strip().replace('"', "'"),
                            name=paths[1].name)
    finally:
        progress.close()
    seconds = time.monotonic() - started
    print(f"wrote {writer.count:,} profiles of {num_labels} labels ({seconds:.1f} s on {scan.device})", flush=True)
    return paths


def _label_column(label: str, names: list[str]) -> int:
    """The column of ``--label``: a label name, or a 0-based index."""
    if label in names:
        return names.index(label)
    if label.isdigit() and int(label) < len(names):
        return int(label)
    raise InputError(f"--label {label!r} is neither a label name nor an index below {len(names)}; "
                     f"labels: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}.")
