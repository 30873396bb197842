"""Genome input: :func:`open_genome` is the one way to open a genome file; callers hold the
:class:`~bigbird_dna.genome.reader.GenomeReader` it returns (record lengths, random access,
streamed chunks; 0-based, half-open coordinates, upper-case bases)."""

from __future__ import annotations

import os
from pathlib import Path

from bigbird_dna.errors import InputError
from bigbird_dna.genome.fasta import FastaGenome
from bigbird_dna.genome.reader import GenomeReader, check_genome_file

READERS: tuple[type[GenomeReader], ...] = (FastaGenome,)  # the formats open_genome tries, in order


def open_genome(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> GenomeReader:
    """The reader of the genome file ``path``, in the first format of :data:`READERS` that accepts it.

    Nothing is read past the first bytes: the file is prepared (indexed, a gzip decompressed into
    ``cache_dir``) on first use of its ``record_lengths``.

    Args:
        path: the genome file.
        cache_dir: where a reader keeps what it prepares once, e.g. a plain gzip's decompressed copy
            (default :func:`~bigbird_dna.genome.cache.default_cache_dir`).

    Raises:
        InputError: ``path`` is a directory, missing, empty, unreadable, or in no accepted format.
    """
    path = Path(path).expanduser()
    check_genome_file(path)
    try:
        reader = next((reader for reader in READERS if reader.accepts(path)), None)
    except OSError as err:
        raise InputError(f"cannot read {path}: {err.strerror or err}. Check the file's permissions.") from err
    if reader is None:
        formats = " and not ".join(reader.description for reader in READERS)
        raise InputError(f"{path} is not a genome file that bigbird_dna reads: it is not {formats}. Check the "
                         "path, or convert the genome.")
    return reader(path, cache_dir)


__all__ = ["READERS", "GenomeReader", "open_genome"]
