"""What ``predict`` checks before it scores anything, and the settings line every output carries.

- Flags that only one task uses (``--threshold``, ``--bed``, ``--format``) are refused for a model
  of another task; each predictor module lists its own in ``FLAGS``.
- The output folder must be writable (a probe file is written and removed).
- The same FASTA given twice, or a record name in two places, is refused: rows are keyed by record
  name, so two records of one name would be indistinguishable in every output.
- A window that needs more tokens than the model has is refused before any window is scored, naming
  the record and the window (0-based, half-open). When ``window + 2 <= max_positions`` no window can
  (every token holds at least one base) and only the record names are read.
"""

from __future__ import annotations

import argparse
import os
from itertools import islice
from pathlib import Path
from typing import Iterator, Sequence

from bigbird_dna import __version__
from bigbird_dna.errors import InputError
from bigbird_dna.genome.fasta_stream import iter_fasta, record_names
from bigbird_dna.predict.driver import iter_windows, long_window_message
from bigbird_dna.runtime.hydra_callbacks import ensure_writable_dir
from bigbird_dna.tokenizer import DNATokenizer

# Flags that only some tasks use, with what they do (for the error message).
TASK_FLAGS = {"threshold": "the BED cut-off of promoter scores", "bed": "chromatin intervals to score",
              "format": "the output file format", "merge": "joining overlapping promoter windows",
              "label": "the chromatin label of a track"}
_CHECK_BATCH = 256


def check_task_flags(args: argparse.Namespace, task: str, accepted: Sequence[str]) -> None:
    """Refuse a task-specific flag given (not None) for a model whose predictor does not use it."""
    for name, meaning in TASK_FLAGS.items():
        if getattr(args, name, None) is not None and name not in accepted:
            raise InputError(f"--{name} ({meaning}) does not apply to a '{task}' model; remove it.")
    if args.combine is not None and args.strands not in (None, "both"):
        raise InputError(f"--combine {args.combine} combines the two strands; it does not apply to "
                         f"--strands {args.strands}. Remove it or use --strands both.")


def check_output_folder(prefix: str | os.PathLike) -> None:
    """Create the folder of ``prefix`` if needed and prove it is writable, or raise :class:`InputError`."""
    folder = Path(prefix).expanduser().parent
    try:
        ensure_writable_dir(folder)
    except InputError as err:
        cause = err.__cause__
        raise InputError(f"cannot write to the output folder {folder}: {getattr(cause, 'strerror', None) or cause}. "
                         "Choose a writable one with --out-prefix DIR/NAME.") from cause


def _check_same_files(fastas: Sequence[str | os.PathLike]) -> None:
    for i, path in enumerate(fastas):
        for other in fastas[:i]:
            if os.path.samefile(path, other):
                raise InputError(f"{other} and {path} are the same file; give each FASTA once.")


def _records(fastas: Sequence[str | os.PathLike], need_sequences: bool) -> Iterator[tuple[str, str, str | None]]:
    for path in fastas:
        if need_sequences:
            yield from ((str(path), name, seq) for name, seq in iter_fasta(path))
        else:
            yield from ((str(path), name, None) for name in record_names(path))


def check_fastas(fastas: Sequence[str | os.PathLike], window: int, stride: int, strands: Sequence[str],
                 tokenizer: DNATokenizer, max_tokens: int) -> None:
    """Refuse repeated files, repeated record names and windows longer than the model's context."""
    _check_same_files(fastas)
    need_tokens = window + 2 > max_tokens
    seen: dict[str, str] = {}
    for path, name, seq in _records(fastas, need_tokens):
        if name in seen:
            where = f"twice in {path}" if seen[name] == path else f"in both {seen[name]} and {path}"
            raise InputError(f"record name {name!r} appears {where}; rows are keyed by record name, so rename "
                             "one (or scan the files separately).")
        seen[name] = path
    if not need_tokens:
        return
    print(f"checking that every {window}-bp window fits the model's {max_tokens} tokens", flush=True)
    windows = iter_windows(fastas, window, stride, strands)
    while batch := list(islice(windows, _CHECK_BATCH)):
        for w, ids in zip(batch, tokenizer.encode_batch([w.seq for w in batch])):
            if len(ids) + 2 > max_tokens:
                raise InputError(long_window_message(w.record, w.start, w.end, w.strand, len(ids) + 2, max_tokens))


def settings(args: argparse.Namespace, export, window: int, stride: int | None, **extra) -> dict[str, str]:
    """Predict's settings as recorded in every output (TSV ``#`` line, BED track line, HDF5 attrs)."""
    values = {"model": str(export.path), "task": export.task, "inputs": ",".join(map(str, args.fasta)),
              "window_bp": window, "stride_bp": stride, "strands": args.strands, "combine": args.combine,
              **extra, "bigbird_dna": __version__, "coordinates": "0-based,half-open"}
    return {key: str(value) for key, value in values.items() if value is not None}


def settings_comment(values: dict[str, str]) -> str:
    """One ``#`` line for a TSV: ``# bigbird_dna predict key=value ...``."""
    return "# bigbird_dna predict " + " ".join(f"{k}={v}" for k, v in values.items()) + "\n"
