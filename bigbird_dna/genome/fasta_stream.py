"""Streaming FASTA reading in chunks of bases: plain or gzip (bgzip included), with clear errors.

:func:`iter_chunks` is the one parser: it reads a file once, line by line, and hands out each
record's bases in chunks of about ``chunk_bp``, so memory does not grow with the record's length
(a 250-Mbp chromosome is read in 1-Mbp pieces). Characters are checked chunk by chunk, as they
are read. A genome's streamed pass (:meth:`~bigbird_dna.genome.fasta.FastaGenome.chunks`) is this
parser, upper-cased. :func:`iter_fasta` joins the chunks of each record for FASTA files of short
sequences (class files, sequences to embed), case kept. Coordinates are 0-based and half-open.

Parsing follows Biopython's ``SimpleFastaParser``: the name is the header's first word
(``record_<k>`` for a blank header), trailing whitespace, inner spaces and carriage returns of
sequence lines are dropped, and case is kept.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import Iterator

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import CHUNK_BP, RecordChunk
from bigbird_dna.genome.text import open_text

IUPAC = frozenset("ACGTNRYSWKMBDHVacgtnryswkmbdhv")
_NOT_IUPAC = re.compile(f"[^{''.join(sorted(IUPAC))}]")


def _check_bases(seq: str, where: str) -> None:
    if _NOT_IUPAC.search(seq):
        bad = set(seq) - IUPAC
        raise InputError(f"{where}: {sorted(bad)[:5]} are not nucleotide codes (A, C, G, T, N or IUPAC).")


def check_sequence(seq: str, where: str) -> str:
    """``seq`` itself, or an :class:`InputError` if it is empty or holds a non-IUPAC character."""
    if not seq:
        raise InputError(f"{where}: the sequence is empty. Remove the entry or give it bases.")
    _check_bases(seq, where)
    return seq


class _RecordReader:
    """Sequence lines of the current record, handed out as checked :class:`RecordChunk` s."""

    def __init__(self, path: str | os.PathLike, title: str, number: int):
        self.path = path
        self.name = title.split(None, 1)[0] if title.strip() else f"record_{number}"
        self.where = f"{path} record {self.name!r}"
        self.lines: list[str] = []
        self.pending = 0  # characters in self.lines
        self.start = 0  # bases handed out so far

    def take(self, last: bool) -> RecordChunk | None:
        seq = "".join(self.lines).replace(" ", "").replace("\r", "")
        self.lines, self.pending = [], 0
        if not seq and not last:
            return None
        if last and not seq and not self.start:
            raise InputError(f"{self.where}: the sequence is empty. Remove the entry or give it bases.")
        _check_bases(seq, self.where)
        chunk = RecordChunk(self.name, self.start, seq, last)
        self.start += len(seq)
        return chunk


def iter_chunks(path: str | os.PathLike, chunk_bp: int = CHUNK_BP) -> Iterator[RecordChunk]:
    """The bases of every record of ``path``, in file order, in chunks of ``chunk_bp`` to
    ``chunk_bp`` plus one line; each record ends with a chunk whose ``last`` is True.

    Raises:
        InputError: a missing, unreadable, truncated or non-FASTA file, a file with no record, or an
            empty record or one with non-nucleotide characters (raised at the chunk that holds them).
    """
    count = 0
    try:
        with open_text(path) as handle:  # read once, front to back: no probe and seek (a gzip would inflate twice)
            record: _RecordReader | None = None
            for line in handle:
                if line.startswith(">"):
                    if record is not None:
                        yield record.take(last=True)
                    count += 1
                    record = _RecordReader(path, line[1:].rstrip(), count)
                    continue
                if record is None:
                    raise InputError(f"{path} is not a FASTA file: it should start with '>' (a record header).")
                if record.pending >= chunk_bp and (chunk := record.take(last=False)) is not None:
                    yield chunk
                line = line.rstrip()
                record.lines.append(line)
                record.pending += len(line)
            if record is not None:
                yield record.take(last=True)
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as err:
        raise InputError(f"cannot read {path}: {err}. Check that it is a complete FASTA (plain or gzip).") from err
    if not count:
        raise InputError(f"{path} holds no FASTA records.")


def iter_fasta(path: str | os.PathLike) -> Iterator[tuple[str, str]]:
    """``(name, sequence)`` of each record, one whole record at a time (:func:`iter_chunks` joined).

    Raises:
        InputError: as :func:`iter_chunks`.
    """
    parts: list[str] = []
    for chunk in iter_chunks(path):
        parts.append(chunk.seq)
        if chunk.last:
            yield chunk.record, "".join(parts)
            parts = []
