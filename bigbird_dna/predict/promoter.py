"""Promoter predictor of ``python -m bigbird_dna.predict``: windows scored, written as TSV and BED.

``PREFIX.tsv`` (header row): ``record start end strand score n_fraction``, one row per window (and
per strand with ``--combine per-strand``); ``score`` is the promoter probability, ``strand`` is
``.`` when both strands are averaged, and ``n_fraction`` the share of N/IUPAC codes in the window.

``PREFIX.bed`` (BED6): the windows with ``score >= --threshold``, named ``promoter``, with the
probability times 1000 (rounded) as the BED score. Both use 0-based, half-open coordinates.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import Export
from bigbird_dna.predict.driver import (
    STRAND_CHOICES,
    ScanProgress,
    atomic_outputs,
    iter_windows,
    resolve_device,
    score_windows,
)
from bigbird_dna.tasks.classification import classifier_from_export

TSV_HEADER = "record\tstart\tend\tstrand\tscore\tn_fraction\n"


def predict(export: Export, args: argparse.Namespace) -> list[Path]:
    """Scan ``args.fasta`` with the promoter model of ``export``; returns the two written paths."""
    window = args.window or export.task_config.get("predict_window_bp")
    if not window:
        raise InputError(f"{export.path} does not record a prediction window; pass --window BP.")
    stride = args.stride or window
    device = resolve_device(args.device)
    precision = args.precision if args.precision != "auto" else ("bf16" if device.type == "cuda" else "fp32")
    model = classifier_from_export(export).to(device)
    if model.hparams.num_labels != 1:
        raise InputError(f"{export.path} has {model.hparams.num_labels} outputs; a promoter model has one.")
    strands = STRAND_CHOICES[args.strands]
    average = args.combine == "mean" and len(strands) == 2
    prefix = Path(args.out_prefix)
    paths = [Path(f"{prefix}.tsv"), Path(f"{prefix}.bed")]
    started, rows, hits = time.monotonic(), 0, 0
    progress = ScanProgress(enabled=not args.no_progress)
    try:
        with atomic_outputs(paths) as (tsv_path, bed_path), open(tsv_path, "w") as tsv, open(bed_path, "w") as bed:
            tsv.write(TSV_HEADER)
            windows = iter_windows(args.fasta, window, stride, strands)
            scored = score_windows(model.predict_proba, export.tokenizer, windows, args.batch_size,
                                   model.config.max_positions, device, precision)
            pending = None
            for scan_window, scores in scored:
                progress.advance(scan_window)
                score = float(scores[0])
                if average:  # "+" then "-" of the same window arrive back to back
                    if scan_window.strand == "+":
                        pending = score
                        continue
                    score, strand = (pending + score) / 2, "."
                else:
                    strand = scan_window.strand
                w = scan_window
                tsv.write(f"{w.record}\t{w.start}\t{w.end}\t{strand}\t{score:.6f}\t{w.n_fraction:.4f}\n")
                rows += 1
                if score >= args.threshold:
                    bed.write(f"{w.record}\t{w.start}\t{w.end}\tpromoter\t{round(score * 1000)}\t{strand}\n")
                    hits += 1
    finally:
        progress.close()
    seconds = time.monotonic() - started
    print(f"scored {rows:,} windows ({progress.bases:,} bp, {progress.bases / max(seconds, 1e-9) / 1e6:.3f} Mbp/s "
          f"on {device}); {hits:,} at or above {args.threshold}", flush=True)
    return paths
