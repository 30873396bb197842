"""Promoter predictor of ``python -m bigbird_dna.predict``: windows scored, written as TSV and BED.

``PREFIX.tsv``: one ``# bigbird_dna predict key=value ...`` line with the settings, a header row,
then ``record start end strand score n_fraction``, one row per window (and per strand with
``--combine per-strand``); ``score`` is the promoter probability, ``strand`` is ``.`` when both
strands are combined (mean or maximum), and ``n_fraction`` the share of N/IUPAC codes in the window.

``PREFIX.bed`` (BED6): a ``track`` line with the same settings, then the windows with
``score >= --threshold``, named ``promoter``, with the probability times 1000 (rounded) as the BED
score; with ``--merge`` overlapping or touching such windows are one interval (max score).

``--gzip`` (or an ``--out-prefix`` ending in ``.tsv.gz``) writes ``PREFIX.tsv.gz`` instead of the TSV;
``--format bedgraph|bigwig`` adds ``PREFIX.bedGraph`` or ``PREFIX.bw``, the scores as a genome track
(bins: :mod:`bigbird_dna.predict.tracks`). All use 0-based, half-open coordinates.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import Export
from bigbird_dna.predict.checks import check_distinct_files, settings, settings_comment
from bigbird_dna.predict.driver import STRAND_CHOICES, Scan, ScanProgress
from bigbird_dna.predict.tiling import iter_windows
from bigbird_dna.predict.tracks import (TRACK_SUFFIX, BedWriter, TrackBins, check_track_args, open_tsv, tsv_path,
                                       write_track)
from bigbird_dna.runtime.atomic import atomic_paths

TSV_HEADER = "record\tstart\tend\tstrand\tscore\tn_fraction\n"
FLAGS = ("threshold", "format", "merge")  # the task-specific flags this predictor uses


def track_line(name: str, values: dict[str, str]) -> str:
    """A BED ``track`` line carrying predict's settings (quotes are not allowed inside values)."""
    description = " ".join(f"{k}={v}" for k, v in values.items()).replace('"', "'")
    return f'track name="{name}" description="bigbird_dna predict {description}" useScore=1\n'


def predict(export: Export, args: argparse.Namespace) -> list[Path]:
    """Scan ``args.fasta`` with the promoter model of ``export``; returns the two written paths."""
    fmt, compressed = getattr(args, "format", "tsv"), bool(getattr(args, "gzip", False))
    if fmt not in ("tsv", *TRACK_SUFFIX):
        raise InputError(f"--format {fmt} does not apply to a promoter model; use tsv (the default), bedgraph or bigwig.")
    check_track_args(fmt, args.combine, STRAND_CHOICES[args.strands])
    scan = Scan.from_args(export, args)
    if scan.model.num_labels != 1:
        raise InputError(f"{export.path} has {scan.model.num_labels} outputs; a promoter model has one.")
    stride = args.stride or scan.window
    check_distinct_files(args.fasta)
    prefix = Path(args.out_prefix)
    paths = [tsv_path(prefix, compressed), Path(f"{prefix}.bed")]
    paths += [Path(f"{prefix}{TRACK_SUFFIX[fmt]}")] if fmt in TRACK_SUFFIX else []
    values = settings(args, export, scan.window, stride, threshold=args.threshold, merge=args.merge or None)
    started, rows = time.monotonic(), 0
    progress = ScanProgress(enabled=not args.no_progress)
    track = TrackBins(scan.window, stride) if fmt in TRACK_SUFFIX else None
    try:
        with atomic_paths(paths) as temporary, open_tsv(temporary[0], compressed) as tsv, \
                open(temporary[1], "w") as bed:
            tsv.write(settings_comment(values) + TSV_HEADER)
            bed.write(track_line(prefix.name, values))
            hits = BedWriter(bed, args.merge)
            windows = iter_windows(args.fasta, scan.window, stride, scan.strands)
            # float64: the mean of two float32 probabilities is exact, as this TSV has always written it
            for _, w, strand, scores in scan.rows(windows, args.batch_size, dtype=torch.float64):
                progress.advance(w)
                score = float(scores[0])
                tsv.write(f"{w.record}\t{w.start}\t{w.end}\t{strand}\t{score:.6f}\t{w.n_fraction:.4f}\n")
                rows += 1
                if track is not None:
                    track.add(w.record, w.start, w.end, float(f"{score:.6f}"))
                if score >= args.threshold:
                    hits.add(w.record, w.start, w.end, strand, score)
            hits.flush()
            if track is not None:
                write_track(temporary[2], fmt, track, settings_comment(values)[2:].strip().replace('"', "'"),
                            name=paths[2].name)
    finally:
        progress.close()
    seconds = time.monotonic() - started
    print(f"scored {rows:,} windows ({progress.bases:,} bp, {progress.bases / max(seconds, 1e-9) / 1e6:.3f} Mbp/s "
          f"on {scan.device}); {hits.count:,} BED rows at or above {args.threshold}", flush=True)
    return paths
