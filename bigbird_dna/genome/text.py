"""Open a text file that may be gzip-compressed: the one reader every table, BED and FASTA stream uses."""

from __future__ import annotations

import gzip
import os
from pathlib import Path
from typing import TextIO

from bigbird_dna.errors import InputError

GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | os.PathLike) -> bool:
    """Whether ``path`` starts with the gzip magic bytes (bgzip included), whatever its name."""
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def open_text(path: str | os.PathLike, what: str = "file", fix: str = "") -> TextIO:
    """Open a plain or gzip text file for reading (gzip is recognised by its magic bytes).

    Raises:
        InputError: ``path`` is not a file (the message names it as ``what`` and adds ``fix``), or
            it cannot be read.
    """
    path = Path(path).expanduser()
    if path.is_dir():
        raise InputError(f"{what} {path} is a directory, not a file." + (f" {fix}" if fix else ""))
    if not path.is_file():
        raise InputError(f"{what} not found: {path}." + (f" {fix}" if fix else ""))
    try:
        gzipped = is_gzip(path)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}.") from err
    return gzip.open(path, "rt") if gzipped else open(path)
