"""``python -m bigbird_dna.predict``: score FASTA files with an exported model.

Examples::

    # promoter probability of 8 kbp windows, both strands averaged, on a gzip genome
    python -m bigbird_dna.predict --model outputs/promoter/runs/X/export genome.fa.gz --out-prefix genome_promoters
    # overlapping windows, strands reported separately, promoters above 0.9 in the BED
    python -m bigbird_dna.predict --model EXPORT a.fa b.fa.gz --window 1000 --stride 250 \\
        --combine per-strand --threshold 0.9 --out-prefix scan

The export's output picks the predictor (:mod:`bigbird_dna.inference.predictors`): one sigmoid
label (promoter) writes ``PREFIX.tsv`` and ``PREFIX.bed``, several (chromatin) ``PREFIX.tsv`` or
``PREFIX.h5``, a softmax over classes (classify) ``PREFIX.tsv``. Coordinates are 0-based, half-open.

Genome tracks (``--format bedgraph|bigwig``; chromatin: of one ``--label NAME|INDEX``): each
window's score is written over its own bin, the window itself ``[start, end)`` when windows do not
overlap (stride >= window), else the stride-wide bin centred on the window; bedGraph is sorted and
non-overlapping, bigWig needs pip install 'bigbird_dna[tracks]'. ``--gzip`` (or an ``--out-prefix``
ending in ``.tsv.gz``) writes the long TSV as ``PREFIX.tsv.gz``.
Outputs are written under temporary names and renamed at the end, so a failed run (an unreadable
FASTA, an empty record, a model of the wrong task, a full disk...) leaves no partial file; user
errors print one ``error: ...`` line and exit with status 2; SIGINT/SIGTERM remove the temporary
files and exit with 130/143. Every output records the settings it was made with (a ``#`` line in a
TSV, a ``track`` line in a BED, attributes in HDF5).

Before anything is scored, predict refuses a flag that does not apply to the model's task and the
same FASTA twice. The input is read once, in chunks (memory does not grow with a record's length);
during that pass it refuses a bad record, a record name that appears twice, and a window that needs
more tokens than the model has (naming that record and window, 0-based half-open; windows are never
truncated), and then writes no output.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.runtime.atomic import disk_full_cause
from bigbird_dna.runtime.cli_args import add_device_arguments, parser_from_doc
from bigbird_dna.runtime.malloc import keep_freed_memory

STRANDS = ("+", "-", "both")
COMBINE = ("mean", "max", "per-strand")
# Options whose default is None so that "given" can be told from "default": the defaults.
DEFAULTS = {"strands": "both", "combine": "mean", "threshold": 0.5, "format": "tsv", "merge": False,
            "bed": None, "label": None}


def _workers(text: str) -> str | int:
    if text == "auto":
        return text
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: give auto or a number of processes (0 = none)")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = parser_from_doc("bigbird-dna-predict", __doc__)
    parser.add_argument("fasta", nargs="+", help="FASTA files to scan (plain or gzip), one or more")
    parser.add_argument("--model", required=True, help="export folder of a trained model (<run dir>/export)")
    parser.add_argument("--out-prefix", required=True, help="output path prefix, e.g. results/scan")
    parser.add_argument("--window", type=int, default=None,
                        help="window in bp (default: the model's task.predict_window_bp)")
    parser.add_argument("--stride", type=int, default=None,
                        help="step between window starts in bp (default: --window; not with --bed)")
    parser.add_argument("--strands", choices=STRANDS, default=None,
                        help="strands to score (default both)")
    parser.add_argument("--combine", choices=COMBINE, default=None,
                        help="with both strands: their mean or maximum (one row, strand '.') or one row per "
                             "strand (default mean)")
    parser.add_argument("--threshold", type=float, default=None,
                        help="promoter: the BED keeps windows scoring >= this (default 0.5)")
    parser.add_argument("--bed", default=None,
                        help="chromatin: score a window centred on each interval of this BED; the FASTA is the genome")
    parser.add_argument("--format", choices=("tsv", "hdf5", "bedgraph", "bigwig"), default=None,
                        help="chromatin: profiles as PREFIX.tsv or PREFIX.h5 (default tsv); promoter: bedgraph or "
                             "bigwig also writes the scores as a track, PREFIX.bedGraph or PREFIX.bw, each window "
                             "over its own bin: [start, end) when stride >= window, else its centred stride-wide bin")
    parser.add_argument("--label", default=None,
                        help="chromatin: with --format bedgraph|bigwig, the label (name or 0-based index) of the track")
    parser.add_argument("--merge", action="store_true", default=None,
                        help="promoter: join overlapping or touching BED windows into one interval (max score; "
                             "strand kept when all agree, else '.')")
    parser.add_argument("--gzip", action="store_true",
                        help="write the TSV gzip-compressed, PREFIX.tsv.gz (also when --out-prefix ends in .tsv.gz)")
    parser.add_argument("--batch-size", type=int, default=16, help="windows per forward pass (default 16)")
    parser.add_argument("--tokenizer-workers", default="auto", type=_workers,
                        help="processes tokenizing windows: auto = none on CPU or for a per-character tokenizer, "
                             "else up to 4 (a GPU outpaces one core of BPE/k-mer tokenization); or a number")
    add_device_arguments(parser)
    parser.add_argument("--no-progress", action="store_true", help="no progress bar or progress lines")
    return parser


def scan_request(args: argparse.Namespace):
    """The typed request of the parsed command line (:class:`~bigbird_dna.inference.request.ScanRequest`)."""
    from bigbird_dna.inference.request import ScanRequest

    given = frozenset(name for name in DEFAULTS if getattr(args, name) is not None)
    values = {name: default if getattr(args, name) is None else getattr(args, name)
              for name, default in DEFAULTS.items()}
    bed = values.pop("bed")
    bed = Path(bed) if bed is not None else None
    return ScanRequest(fastas=tuple(Path(p) for p in args.fasta), out_prefix=Path(args.out_prefix),
                       model=Path(args.model), window=args.window, stride=args.stride, bed=bed, gzip=args.gzip,
                       batch_size=args.batch_size, tokenizer_workers=args.tokenizer_workers, device=args.device,
                       precision=args.precision, cuda_graphs=args.cuda_graphs, progress=not args.no_progress,
                       given=given, **values)


class Interrupted(BaseException):
    """SIGINT or SIGTERM during a scan: unwinds like Ctrl-C, so every temporary file is removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _interrupt(signum, frame) -> None:
    for other in (signal.SIGINT, signal.SIGTERM):  # a second signal must not cut the clean-up short
        signal.signal(other, signal.SIG_IGN)
    raise Interrupted(signum)


@contextmanager
def _signals_unwind():
    """SIGINT and SIGTERM raise :class:`Interrupted` in the main thread while this is open."""
    in_main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGINT, signal.SIGTERM)} if in_main else {}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _is_output_error(err: OSError, prefix: str) -> bool:
    """A full disk (h5py says so only in its message), or an error on a file in the output folder."""
    if disk_full_cause(err) is not None or "No space left" in str(err):
        return True
    name = getattr(err, "filename", None)
    return bool(name) and Path(name).resolve().parent == Path(prefix).resolve().parent


def _predict(request) -> list[Path]:
    from bigbird_dna.inference.predictors import predict
    from bigbird_dna.model.export import load_export

    try:
        return predict(request, load_export(request.model))
    except OSError as err:
        if not _is_output_error(err, request.out_prefix):
            raise
        full = disk_full_cause(err)
        raise InputError(f"cannot write {request.out_prefix}.*: {(full or err).strerror or err}; nothing was "
                         "written (temporary files removed). Free space or choose another --out-prefix.") from err


@exit_on_input_error
def main(argv: list[str] | None = None) -> list[Path]:
    # The opposite of train.py on purpose: there every DataLoader worker tokenizes its own batches,
    # so a Rust thread pool per worker only oversubscribes the cores (and forking after use warns).
    # predict starts no worker process: one background thread tokenizes whole batches, and the
    # tokenizer's own threads are the only parallelism it gets. setdefault: a user's setting wins.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    # Without it a third of CPU prediction's time went to the kernel, faulting in each batch's
    # freed ~30-MiB intermediates again (bigbird_dna/runtime/malloc.py).
    keep_freed_memory()
    args = build_parser().parse_args(argv)
    if args.out_prefix.endswith(".tsv.gz"):
        args.out_prefix, args.gzip = args.out_prefix[:-len(".tsv.gz")], True
    try:
        with _signals_unwind():
            request = scan_request(args)
            request.check()
            written = _predict(request)
    except Interrupted as stop:
        name = signal.Signals(stop.signum).name
        print(f"error: stopped by {name}; no output was written (temporary files removed).", file=sys.stderr)
        sys.exit(128 + stop.signum)
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return written


def cli() -> None:
    """Console-script entry point ``bigbird-dna-predict`` (:func:`main` returns the written paths)."""
    main()
