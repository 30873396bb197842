"""The one BED reader: intervals of a genome, 0-based and half-open, from plain or gzip files.

Every BED-like input goes through :func:`bed_lines`: plain BED (:func:`read_bed`), the labelled
bins of the chromatin task, and EPDnew promoter files, which add their own column checks on top.

**Format.** Lines are read through :func:`~bigbird_dna.genome.text.open_text`, so ``.bed.gz`` works.
Blank lines and lines starting with ``#``, ``track`` or ``browser`` are skipped. A line is split on
tabs when it holds one, else on runs of whitespace. The first three columns are ``chrom``, ``start``,
``end`` with ``0 <= start < end`` (0-based, half-open: ``chr1 0 10`` is the first ten bases). Errors
name the file and the line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, NamedTuple, TextIO

from bigbird_dna.errors import InputError
from bigbird_dna.genome.text import open_text

SKIPPED_PREFIXES = ("#", "track", "browser")


class Region(NamedTuple):
    """Bases ``[start, end)`` of ``record`` (0-based, half-open); unpacks as ``record, start, end``."""

    record: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class BedLine:
    """One data line: its ``fields`` and ``where`` it is (``"PATH, line N"``, for error messages)."""

    fields: list[str]
    where: str

    def region(self) -> Region:
        """The line's first three columns, checked: integers with ``0 <= start < end``."""
        fields = self.fields
        if len(fields) < 3:
            raise InputError(f"{self.where}: expected chrom, start and end (0-based, half-open), got {fields}.")
        try:
            start, end = int(fields[1]), int(fields[2])
        except ValueError:
            raise InputError(f"{self.where}: start {fields[1]!r} and end {fields[2]!r} are not integers; expected "
                             "chrom, start, end (0-based, half-open).") from None
        if not 0 <= start < end:
            raise InputError(f"{self.where}: interval {fields[0]}:{start}-{end} is empty or negative; "
                             "need 0 <= start < end (0-based, half-open).")
        return Region(fields[0], start, end)


def split_fields(line: str) -> list[str]:
    """Tab-separated fields, or whitespace-separated ones when the line holds no tab."""
    line = line.rstrip("\r\n")
    return line.split("\t") if "\t" in line else line.split()


def is_header(fields: list[str]) -> bool:
    """A line whose ``start`` column is not an integer names the columns."""
    try:
        int(fields[1])
    except (ValueError, IndexError):
        return True
    return False


def _data_lines(handle: TextIO, path: str | os.PathLike) -> Iterator[BedLine]:
    with handle:
        for number, line in enumerate(handle, start=1):
            if line.strip() and not line.startswith(SKIPPED_PREFIXES):
                yield BedLine(split_fields(line), f"{path}, line {number}")


def bed_lines(path: str | os.PathLike, what: str = "BED file", fix: str = "") -> Iterator[BedLine]:
    """Every data line of a BED-like file, plain or gzip (see the module docstring).

    The file is opened now, so a missing one is an :class:`InputError` (naming it as ``what`` and
    adding ``fix``) at the call, not at the first line.
    """
    return _data_lines(open_text(path, what, fix), Path(path).expanduser())


def read_bed(path: str | os.PathLike) -> list[Region]:
    """The intervals of a BED file; extra columns are ignored and an optional header line skipped.

    Raises:
        InputError: a missing file, bad coordinates (the message names the line), or no interval.
    """
    return read_stranded_bed(path)[0]


def read_stranded_bed(path: str | os.PathLike) -> tuple[list[Region], list[str | None]]:
    """The intervals of a BED file (as :func:`read_bed`) and the strand of each: column 6 when it is
    ``+`` or ``-``, ``None`` when the line has no column 6 or ``.`` there; anything else is an error."""
    regions: list[Region] = []
    strands: list[str | None] = []
    for line in bed_lines(path):
        if not regions and is_header(line.fields):
            continue
        regions.append(line.region())
        strand = line.fields[5] if len(line.fields) >= 6 else "."
        if strand not in ("+", "-", "."):
            raise InputError(f"{line.where}: strand (column 6) is {strand!r}; expected +, - or '.'.")
        strands.append(None if strand == "." else strand)
    if not regions:
        raise InputError(f"{path} holds no intervals; give one per line: chrom, start, end.")
    return regions, strands
