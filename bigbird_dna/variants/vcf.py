"""Reading variants: a VCF (plain or gzip) or a ``chrom pos ref alt`` TSV, 1-based ``pos`` as in VCF.

Header lines (``#``) and blank lines are skipped. A multi-allelic ALT (``A,T``) becomes one
:class:`Variant` per allele. Alleles that are not plain bases, symbolic (``<DEL>``), the spanning
deletion ``*``, missing (``.``) or breakends (``]chr:1]A``), are counted in :class:`ReadCounts`
and skipped.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Iterator

from bigbird_dna.errors import InputError
from bigbird_dna.genome.text import open_text

_BASES = re.compile(r"^[ACGTNRYKMSWBDHV]+$", re.IGNORECASE)


@dataclass(frozen=True)
class Variant:
    """One ALT allele of a site, as given: ``pos`` is 1-based (VCF), ``ref`` and ``alt`` keep their
    case, ``id`` is the VCF's ID column (``.`` when it has none, and for TSV input); ``line`` is its
    line in the input file."""

    chrom: str
    pos: int
    ref: str
    alt: str
    line: int
    id: str = "."

    @property
    def start(self) -> int:
        """0-based start of the REF allele."""
        return self.pos - 1


@dataclass
class ReadCounts:
    """What reading skipped: symbolic/missing alleles, by allele text."""

    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, allele: str) -> None:
        key = allele if allele in ("*", ".") else ("<symbolic>" if allele.startswith("<") else "<breakend/other>")
        self.skipped[key] = self.skipped.get(key, 0) + 1

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())


def is_plain(allele: str) -> bool:
    """Whether an allele is spelled with IUPAC bases only (what can be written into a window)."""
    return bool(_BASES.match(allele))


def read_variants(path: str | os.PathLike, fmt: str, counts: ReadCounts) -> Iterator[Variant]:
    """Variants of a ``fmt`` = ``"vcf"`` or ``"tsv"`` file, one per ALT allele, in file order.

    Raises:
        InputError: a line with too few columns or a position that is not a positive integer (the
            message names the line).
    """
    what = "VCF" if fmt == "vcf" else "variant TSV"
    columns = (0, 1, 3, 4) if fmt == "vcf" else (0, 1, 2, 3)
    with open_text(path, what) as handle:
        for number, text in enumerate(handle, start=1):
            text = text.rstrip("\r\n")
            if not text.strip() or text.startswith("#"):
                continue
            fields = text.split("\t") if "\t" in text else text.split()
            if len(fields) <= columns[-1]:
                raise InputError(f"{path} line {number}: expected {columns[-1] + 1} columns "
                                 f"({'CHROM POS ID REF ALT' if fmt == 'vcf' else 'chrom pos ref alt'}), "
                                 f"got {len(fields)}.")
            chrom, pos, ref, alts = (fields[i] for i in columns)
            if fmt == "tsv" and number == 1 and not pos.isdigit():
                continue  # a header row without '#'
            if not pos.isdigit() or int(pos) < 1:
                raise InputError(f"{path} line {number}: position {pos!r} is not a 1-based integer.")
            for alt in alts.split(","):
                if not (is_plain(ref) and is_plain(alt)):
                    counts.skip(alt if not is_plain(alt) else ref)
                    continue
                yield Variant(chrom, int(pos), ref, alt, number, fields[2] if fmt == "vcf" else ".")
