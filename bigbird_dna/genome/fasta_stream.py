"""Streaming FASTA reading, record by record: plain or gzip (bgzip included), with clear errors.

Only one record is held in memory at a time, so a whole genome never has to fit. Coordinates of
anything cut from a record are 0-based and half-open.
"""

from __future__ import annotations

import os
import zlib
from typing import Iterator

from Bio.SeqIO.FastaIO import SimpleFastaParser

from bigbird_dna.errors import InputError
from bigbird_dna.genome.text import open_text

IUPAC = frozenset("ACGTNRYSWKMBDHVacgtnryswkmbdhv")


def check_sequence(seq: str, where: str) -> str:
    """``seq`` itself, or an :class:`InputError` if it is empty or holds a non-IUPAC character."""
    if not seq:
        raise InputError(f"{where}: the sequence is empty. Remove the entry or give it bases.")
    bad = set(seq) - IUPAC
    if bad:
        raise InputError(f"{where}: {sorted(bad)[:5]} are not nucleotide codes (A, C, G, T, N or IUPAC).")
    return seq


def iter_fasta(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """``(name, sequence)`` of each record, streamed; the name is the header's first word.

    Raises:
        InputError: a missing, unreadable, truncated or non-FASTA file, a file with no record, or an
            empty record or one with non-nucleotide characters.
    """
    count = 0
    try:
        with open_text(path) as handle:
            if handle.read(1) != ">":
                raise InputError(f"{path} is not a FASTA file: it should start with '>' (a record header).")
            handle.seek(0)
            for title, seq in SimpleFastaParser(handle):
                name = title.split(None, 1)[0] if title.strip() else f"record_{count + 1}"
                count += 1
                yield name, check_sequence(seq, f"{path} record {name!r}")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as err:
        raise InputError(f"cannot read {path}: {err}. Check that it is a complete FASTA (plain or gzip).") from err
    if not count:
        raise InputError(f"{path} holds no FASTA records.")


def record_names(path: str | os.PathLike) -> Iterator[str]:
    """The record names of a FASTA (plain or gzip), read from its header lines only, in order.

    As cheap as one pass over the file: sequence lines are skipped, not joined or checked (that is
    :func:`iter_fasta`'s job), so a pre-flight check can afford it on a whole genome.
    """
    count = 0
    try:
        with open_text(path) as handle:
            for line in handle:
                if line.startswith(">"):
                    count += 1
                    title = line[1:].strip()
                    yield title.split(None, 1)[0] if title else f"record_{count}"
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as err:
        raise InputError(f"cannot read {path}: {err}. Check that it is a complete FASTA (plain or gzip).") from err
