"""What ``predict`` checks before it scores anything, and the settings line every output carries.

- Flags that only one task uses (``--threshold``, ``--bed``, ``--format``) are refused for a model
  of another task; each predictor module lists its own in ``FLAGS``.
- The output folder must be writable (a probe file is written and removed).
- The same FASTA given twice is refused (by file identity, without reading it): rows are keyed by
  record name, so its records would be indistinguishable in every output.

Checks that need the FASTA's contents are made during the scan, in its one pass over the input
(:mod:`bigbird_dna.predict.tiling`: a record name twice, a bad record;
:mod:`bigbird_dna.predict.driver`: a window that needs more tokens than the model has). Outputs are
written under temporary names, so such a refusal mid-scan still leaves no file.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Sequence

from bigbird_dna.version import __version__
from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import ensure_writable_dir

# Flags that only some tasks use, with what they do (for the error message).
TASK_FLAGS = {"threshold": "the BED cut-off of promoter scores", "bed": "chromatin intervals to score",
              "format": "the output file format", "merge": "joining overlapping promoter windows",
              "label": "the chromatin label of a track"}


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


def check_distinct_files(fastas: Sequence[str | os.PathLike]) -> None:
    """Refuse a FASTA given twice (under any path): :class:`InputError` naming both paths."""
    for i, path in enumerate(fastas):
        for other in fastas[:i]:
            if os.path.samefile(path, other):
                raise InputError(f"{other} and {path} are the same file; give each FASTA once.")


def settings(args: argparse.Namespace, export, window: int, stride: int | None, **extra) -> dict[str, str]:
    """Predict's settings as recorded in every output (TSV ``#`` line, BED track line, HDF5 attrs)."""
    values = {"model": str(export.path), "task": export.task, "inputs": ",".join(map(str, args.fasta)),
              "window_bp": window, "stride_bp": stride, "strands": args.strands, "combine": args.combine,
              **extra, "bigbird_dna": __version__, "coordinates": "0-based,half-open"}
    return {key: str(value) for key, value in values.items() if value is not None}


def settings_comment(values: dict[str, str]) -> str:
    """One ``#`` line for a TSV: ``# bigbird_dna predict key=value ...``."""
    return "# bigbird_dna predict " + " ".join(f"{k}={v}" for k, v in values.items()) + "\n"
