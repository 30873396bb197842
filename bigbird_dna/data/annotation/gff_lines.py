"""Line-level reading of GFF3 and GTF files: columns, coordinates, attributes, format detection.

Coordinates are converted here, once: GFF/GTF ``start``/``end`` are 1-based and closed, a
:class:`FeatureLine` holds ``start = gff_start - 1`` and ``end = gff_end`` (0-based, half-open, BED),
so ``chr1 . gene 1 10`` becomes ``chr1:0-10``, the first ten bases.

Errors name the file and line (``PATH, line N``) and say what to fix: a line without 9 tab-separated
columns, non-integer or inverted coordinates, a strand other than ``+``, ``-``, ``.``, ``?``, a
seqid that is not a record of the genome, or a feature that runs past its record's end.
"""

from __future__ import annotations

import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote

from bigbird_dna.errors import InputError
from bigbird_dna.genome.records import unknown_record
from bigbird_dna.genome.text import open_text

GFF3, GTF = "gff3", "gtf"
STRANDS = frozenset("+-.?")
_GTF_ATTRIBUTE = re.compile(r'\s*([^\s;"]+)\s+(?:"([^"]*)"|([^\s;"]+))\s*;?')
_GTF_LOOKS = re.compile(r'^\s*[^\s=;"]+\s+"')


@dataclass(frozen=True)
class FeatureLine:
    """One feature line: ``[start, end)`` of ``record`` (0-based, half-open), its type, strand
    (``+``, ``-``, ``.`` or ``?``), raw attribute column and ``line`` number in the file."""

    record: str
    type: str
    start: int
    end: int
    strand: str
    attributes: str
    line: int


def detect_format(path: str | os.PathLike) -> str:
    """``"gff3"`` or ``"gtf"``: from a ``##gff-version``/``#gtf-version`` header, else from the 9th
    column of the first feature line (``key=value`` is GFF3, ``key "value";`` is GTF), else from the
    file name.

    Raises:
        InputError: the format cannot be told (no header, no attributes, no telling name).
    """
    with open_text(path, "annotation file", "Give a GFF3 or GTF file (plain or gzip).") as handle:
        for number, line in enumerate(handle, 1):
            if line.startswith("##gff-version"):
                return GFF3 if line.split()[1:2] and line.split()[1].startswith("3") else GTF
            if line.startswith("#gtf-version"):
                return GTF
            if line.startswith("#") or not line.strip():
                continue
            columns = line.rstrip("\r\n").split("\t")
            if len(columns) == 9 and columns[8].strip() not in ("", "."):
                return GTF if _GTF_LOOKS.match(columns[8]) else GFF3
            if number > 1000:
                break
    name = str(path).lower().removesuffix(".gz")
    if name.endswith((".gtf", ".gff2")):
        return GTF
    if name.endswith((".gff", ".gff3")):
        return GFF3
    raise InputError(f"cannot tell whether {path} is GFF3 or GTF: no '##gff-version' header and no feature "
                     "attributes. Add a '##gff-version 3' first line, or name the file .gff3/.gtf.")


def gff3_attributes(text: str) -> dict[str, list[str]]:
    """GFF3 column 9 (``ID=a;Parent=b,c``) as ``{key: [values]}``, percent-decoded."""
    out: dict[str, list[str]] = {}
    for item in text.strip().split(";"):
        key, sep, value = item.partition("=")
        if sep:
            out[key.strip()] = [unquote(v) for v in value.split(",")]
    return out


def gtf_attributes(text: str) -> dict[str, str]:
    """GTF column 9 (``gene_id "g1"; transcript_id "t1";``) as ``{key: value}`` (first value of each)."""
    out: dict[str, str] = {}
    for match in _GTF_ATTRIBUTE.finditer(text):
        out.setdefault(match.group(1), match.group(2) if match.group(2) is not None else match.group(3))
    return out


def _malformed(where: str, problem: str) -> InputError:
    return InputError(f"{where}: {problem}. A GFF3/GTF feature line has 9 tab-separated columns: seqid, source, "
                      "type, start, end (1-based, closed), score, strand, phase, attributes; fix or remove it.")


def feature_lines(path: str | os.PathLike, record_lengths: dict[str, int]) -> Iterator[FeatureLine]:
    """Every feature line of a GFF3/GTF file (plain or gzip), checked against the genome.

    Comment and directive lines are skipped; a ``##FASTA`` directive ends the features (GFF3 may
    embed sequences after it).

    Raises:
        InputError: a malformed line, a seqid not in ``record_lengths``, or a feature past its
            record's end (each naming the file and line).
    """
    path = Path(path).expanduser()
    try:
        with open_text(path, "annotation file", "Give a GFF3 or GTF file (plain or gzip).") as handle:
            for number, line in enumerate(handle, 1):
                if line.startswith("#"):
                    if line.startswith("##FASTA"):
                        return
                    continue
                if not line.strip():
                    continue
                yield _parse(line, f"{path}, line {number}", number, record_lengths)
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as err:
        raise InputError(f"cannot read {path}: {err}. Check that it is a complete GFF3/GTF file (plain or "
                         "gzip).") from err


def _parse(line: str, where: str, number: int, record_lengths: dict[str, int]) -> FeatureLine:
    columns = line.rstrip("\r\n").split("\t")
    if len(columns) != 9:
        raise _malformed(where, f"expected 9 tab-separated columns, found {len(columns)}")
    record, _, kind, start_text, end_text, _, strand, _, attributes = columns
    try:
        start, end = int(start_text), int(end_text)
    except ValueError:
        raise _malformed(where, f"start {start_text!r} and end {end_text!r} must be integers") from None
    if not 1 <= start <= end:
        raise _malformed(where, f"start {start} and end {end} must satisfy 1 <= start <= end")
    if strand not in STRANDS:
        raise _malformed(where, f"strand {strand!r} must be +, -, . or ?")
    length = record_lengths.get(record)
    if length is None:
        raise InputError(f"{where}: {unknown_record(record, record_lengths, 'the genome FASTA', 'seqid')} Use the "
                         "FASTA of the annotation's assembly, with the same record names (e.g. chr1 vs 1 vs NC_...), "
                         "or remove the line.")
    if end > length:
        raise InputError(f"{where}: the {kind} {record}:{start}-{end} ends past the end of {record}, which is "
                         f"{length:,} bp long. The annotation and the genome FASTA are of different assemblies; "
                         "use matching files.")
    return FeatureLine(record, kind, start - 1, end, strand, attributes, number)
