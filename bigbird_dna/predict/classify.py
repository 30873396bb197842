"""Classify predictor of ``python -m bigbird_dna.predict``: class probabilities of FASTA windows.

Windows are cut as :mod:`bigbird_dna.predict.driver` cuts them (``--window``, default the model's
``task.predict_window_bp``; ``--stride``); a record shorter than the window is one window, so a
FASTA of short sequences gives one row per sequence. Both strands are scored and averaged by
default (strand ``.``); ``--combine max`` takes each class's maximum over the strands (rows then
need not sum to 1) and ``--combine per-strand`` writes one row per strand.

``PREFIX.tsv`` (``PREFIX.tsv.gz`` with ``--gzip``): a ``# bigbird_dna predict key=value ...``
settings line, then the header ``record start end strand n_fraction <class names...> predicted``:
one softmax probability column per class (named by the class, prefixed ``p_`` when a name is one
of the other columns'), and ``predicted``, the class of the highest probability. Coordinates are
0-based, half-open. Written under a temporary name and renamed at the end.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import Export
from bigbird_dna.predict.checks import check_distinct_files, settings, settings_comment
from bigbird_dna.predict.driver import Scan, ScanProgress
from bigbird_dna.predict.tiling import iter_windows
from bigbird_dna.predict.tracks import open_tsv, tsv_path
from bigbird_dna.runtime.atomic import atomic_paths

ROW_FIELDS = ("record", "start", "end", "strand", "n_fraction")
PREDICTED = "predicted"
FLAGS: tuple[str, ...] = ()  # no task-specific flag (--threshold, --bed, --format, ... are refused)


def class_names(export: Export, num_labels: int) -> list[str]:
    """The class names saved in the export, in output order (``class_<j>`` if it has none)."""
    names = export.task_config.get("class_names")
    if isinstance(names, list) and len(names) == num_labels:
        return [str(name) for name in names]
    return [f"class_{j}" for j in range(num_labels)]


def column_names(names: list[str]) -> list[str]:
    """Probability column names: the class names, each prefixed ``p_`` if any would clash with a
    fixed column (or with each other once made tab/newline-free)."""
    columns = [name.replace("\t", " ").replace("\n", " ") for name in names]
    if set(columns) & {*ROW_FIELDS, PREDICTED} or len(set(columns)) < len(columns):
        columns = [f"p_{name}" for name in columns]
    if len(set(columns)) < len(columns):
        columns = [f"p_{j}" for j in range(len(columns))]
    return columns


def predict(export: Export, args: argparse.Namespace) -> list[Path]:
    """Scan ``args.fasta`` with the classifier of ``export``; returns the written TSV's path."""
    scan = Scan.from_args(export, args)
    num_labels = scan.model.num_labels
    if num_labels < 2:
        raise InputError(f"{export.path} has {num_labels} output; a classify model has one per class (2 or more).")
    names = class_names(export, num_labels)
    stride = args.stride or scan.window
    check_distinct_files(args.fasta)
    compressed = bool(getattr(args, "gzip", False))
    path = tsv_path(args.out_prefix, compressed)
    values = settings(args, export, scan.window, stride, classes=",".join(names))
    started, rows = time.monotonic(), 0
    progress = ScanProgress(enabled=not args.no_progress)
    try:
        with atomic_paths([path]) as temporary, open_tsv(temporary[0], compressed) as tsv:
            tsv.write(settings_comment(values) + "\t".join((*ROW_FIELDS, *column_names(names), PREDICTED)) + "\n")
            windows = iter_windows(args.fasta, scan.window, stride, scan.strands)
            for _, w, strand, probs in scan.rows(windows, args.batch_size):
                progress.advance(w)
                scores = "\t".join(f"{p:.6f}" for p in probs.tolist())
                tsv.write(f"{w.record}\t{w.start}\t{w.end}\t{strand}\t{w.n_fraction:.4f}\t{scores}\t"
                          f"{names[int(probs.argmax())]}\n")
                rows += 1
    finally:
        progress.close()
    seconds = time.monotonic() - started
    print(f"classified {rows:,} windows into {num_labels} classes ({progress.bases:,} bp, {seconds:.1f} s "
          f"on {scan.device})", flush=True)
    return [path]
