"""The one object through which the package reads a genome: :class:`GenomeReader`.

:func:`bigbird_dna.genome.open_genome` picks the reader of a file's format; callers hold the
reader, never a path. A reader gives

- :attr:`~GenomeReader.record_lengths`, preparing the file on first use (an index, a decompressed
  copy): touch it in the main process before DataLoader workers start, so they never prepare it
  concurrently;
- random access, :meth:`~GenomeReader.fetch`;
- one streamed pass over the file, :meth:`~GenomeReader.chunks`, which needs no preparation and
  whose memory does not grow with a record's length.

Bases come back upper-case (soft-masking is dropped); N and the other IUPAC codes are kept as
they are, N is never mapped to a base. Coordinates are 0-based and half-open.

A reader can go to DataLoader workers as it is: its open handle is per process, opened on first
use in each process and dropped when the reader is pickled (a handle inherited through fork shares
its file offset with the parent, mdshw5/pyfaidx#211).

A new format is one module with a :class:`GenomeReader` subclass (``accepts``,
``record_lengths``, ``_open``, ``_read``, ``chunks``) and its entry in
:data:`bigbird_dna.genome.READERS`.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Iterator

from bigbird_dna.errors import InputError
from bigbird_dna.genome.records import unknown_record

CHUNK_BP = 1 << 20  # bases per chunk: large enough that per-chunk work is negligible, small next to a genome


@dataclass(frozen=True)
class RecordChunk:
    """Bases ``[start, start + len(seq))`` of ``record`` (0-based, half-open); ``last``: the record
    ends with this chunk. Only a last chunk may be empty, and only in a record that has bases."""

    record: str
    start: int
    seq: str
    last: bool


def check_genome_file(path: Path) -> None:
    """Refuse a genome path that is a directory, missing or empty (:class:`InputError`)."""
    if path.is_dir():
        raise InputError(f"genome FASTA {path} is a directory, not a file. Set data.fasta=PATH to the FASTA "
                         "file inside it.")
    if not path.is_file():
        raise InputError(f"genome FASTA not found: {path}. Set data.fasta=PATH to an existing FASTA file.")
    if path.stat().st_size == 0:
        raise InputError(f"genome FASTA is empty: {path}. Point data.fasta at a FASTA with sequence records.")


class GenomeReader(ABC):
    """Record lengths, random access and streamed chunks of one genome file.

    Args:
        path: the file as the user gave it; messages name it.
        cache_dir: where the reader keeps what it prepares once, e.g. a decompressed copy (``None``:
            :func:`~bigbird_dna.genome.cache.default_cache_dir`).
    """

    description: ClassVar[str]  # the format, as "it is not <description>" reads in open_genome's refusal

    def __init__(self, path: str | os.PathLike, cache_dir: str | os.PathLike | None = None):
        self.path = Path(path)
        self.cache_dir = cache_dir
        self._handle: Any = None
        self._pid: int | None = None

    @classmethod
    @abstractmethod
    def accepts(cls, path: Path) -> bool:
        """Whether ``path`` (an existing, non-empty file) is in this reader's format, from its first bytes."""

    @property
    @abstractmethod
    def record_lengths(self) -> dict[str, int]:
        """Record name to length in bases, in file order; prepares the file on first use."""

    @abstractmethod
    def chunks(self, chunk_bp: int = CHUNK_BP) -> Iterator[RecordChunk]:
        """The bases of every record, upper-case, in file order, in one streamed pass: chunks of about
        ``chunk_bp`` bases, each record ending with a chunk whose ``last`` is True.

        Raises:
            InputError: a malformed file, or a record with no bases or a non-nucleotide character
                (raised at the chunk that holds it).
        """

    @abstractmethod
    def _open(self) -> Any:
        """A random-access handle for this process, with a ``close()`` method."""

    @abstractmethod
    def _read(self, handle: Any, record: str, start: int, end: int) -> str:
        """Bases ``[start, end)`` of ``record`` through ``handle``, upper-case; the coordinates are checked."""

    def fetch(self, record: str, start: int, end: int) -> str:
        """Bases ``[start, end)`` of ``record`` (0-based, half-open), upper-case.

        Raises:
            InputError: an unknown record, or an interval outside it.
        """
        length = self.record_lengths.get(record)
        if length is None:
            raise InputError(f"{unknown_record(record, self.record_lengths, str(self.path))} Use the genome the "
                             "coordinates refer to, with the same record names.")
        if not 0 <= start <= end <= length:
            raise InputError(f"interval {record}:{start}-{end} runs outside the contig, which is "
                             f"{length} bp long (0-based, half-open coordinates).")
        if self._handle is None or self._pid != os.getpid():
            self._handle, self._pid = self._open(), os.getpid()
        return self._read(self._handle, record, start, end)

    @property
    def opened_by(self) -> int | None:
        """The process id that opened the current random-access handle, or ``None`` while none is open."""
        return self._pid

    def close(self) -> None:
        """Close this process's random-access handle; a later :meth:`fetch` opens a new one."""
        if self._handle is not None and self._pid == os.getpid():
            self._handle.close()
        self._handle, self._pid = None, None

    def __enter__(self) -> GenomeReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_handle": None, "_pid": None}
