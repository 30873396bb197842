"""FASTA genomes, plain, gzip or bgzip, one or many records: :class:`FastaGenome`.

Random access goes through pyfaidx, which needs a ``.fai`` index and random access;
:func:`prepare_genome` provides both, once, on first use of
:attr:`~FastaGenome.record_lengths`:

- a plain FASTA is indexed in place (or, if its folder is read-only, through a link in the cache);
- a bgzip FASTA is read directly through its ``.fai``/``.gzi`` indexes;
- a plain gzip FASTA cannot be read at random positions, and pyfaidx cannot index Windows line
  endings (CRLF), so such a file is copied **once** into the cache, decompressed and with ``\n``
  line endings (:mod:`bigbird_dna.genome.cache`); every later run and every DataLoader worker reads
  that indexed copy.

Indexing is the ``index`` phase (:mod:`bigbird_dna.runtime.phases`). A ``.fai`` left from an older
version of the FASTA is refused with the command to delete it, rather than read as short records.
Prepare in the main process before DataLoader workers start: concurrent index creation clobbers the
``.fai`` (mdshw5/pyfaidx#134).

The streamed pass (:meth:`FastaGenome.chunks`) reads the file itself, front to back, with
:func:`~bigbird_dna.genome.fasta_stream.iter_chunks`: no index, no decompressed copy.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Iterator

import pyfaidx

from bigbird_dna.errors import InputError
from bigbird_dna.genome.cache import cache_key, default_cache_dir, has_crlf, plain_copy_once
from bigbird_dna.genome.fasta_stream import iter_chunks
from bigbird_dna.genome.reader import CHUNK_BP, GenomeReader, RecordChunk
from bigbird_dna.genome.text import GZIP_MAGIC, is_gzip
from bigbird_dna.runtime.phases import counted, human_size, phase

_BASES = frozenset("ACGT")
_BASE_PROBE_BP = 1 << 20  # bases read at a time while looking for a first real base


def _is_bgzip(path: Path) -> bool:
    """bgzip files are gzip members whose extra field carries the ``BC`` subfield."""
    with open(path, "rb") as handle:
        header = handle.read(16)
    return header[:2] == GZIP_MAGIC and header[3] & 4 != 0 and header[12:14] == b"BC"


def _readable_location(path: Path, cache_dir: Path) -> Path:
    """pyfaidx writes ``.fai`` beside the FASTA; use a link in the cache if that folder is read-only."""
    if os.access(path.parent, os.W_OK) or Path(f"{path}.fai").exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    link = cache_dir / f"{path.name}.{cache_key(path)}{''.join(path.suffixes[-1:])}"
    if not link.exists():
        link.symlink_to(path.resolve())
    return link


def _open_indexed(path: Path) -> pyfaidx.Fasta:
    """pyfaidx's upper-casing reader of a randomly readable FASTA, building its ``.fai`` if missing."""
    try:
        return pyfaidx.Fasta(str(path), sequence_always_upper=True, as_raw=True, rebuild=False, build_index=True)
    except (pyfaidx.FastaIndexingError, pyfaidx.UnsupportedCompressionFormat, ValueError) as err:
        raise InputError(f"malformed FASTA {path}: {str(err).rstrip('.')}. Fix the file "
                         "(every line of a record but its last must have the same length).") from err


def prepare_genome(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None
                   ) -> tuple[Path, dict[str, int]]:
    """Check a FASTA, make it randomly readable and indexed; the path to open and the record lengths.

    Args:
        path: an existing, non-empty FASTA file, plain, gzip or bgzip
            (:func:`~bigbird_dna.genome.open_genome` checks that first).
        cache_dir: where decompressed copies of plain-gzip files live (default
            :func:`~bigbird_dna.genome.cache.default_cache_dir`).

    Returns:
        ``(indexed path, {record: length})``: the path pyfaidx opens (the input itself, its cached
        copy, or a link to it in the cache), and the lengths in bases, in file order.

    Raises:
        InputError: the file is not FASTA, malformed, holds no sequence, or has a stale ``.fai``
            (records past the end of the file); a gzip copy cannot be written or the gzip is
            truncated (see :func:`~bigbird_dna.genome.cache.plain_copy_once`).
    """
    path = original = Path(path).expanduser()
    cache_dir, copy = Path(cache_dir) if cache_dir else default_cache_dir(), None
    if (is_gzip(path) and not _is_bgzip(path)) or has_crlf(path):  # pyfaidx reads neither
        path = copy = plain_copy_once(path, cache_dir)
    try:
        with open(path, "rb") as handle:
            first = handle.read(1)
        if not is_gzip(path) and first != b">":
            raise InputError(f"{original} is not a FASTA file: it should start with '>' (a record header).")
        path = _readable_location(path, cache_dir)
        indexed = Path(f"{path}.fai").exists()
        # Builds and checks the .fai once, here, before any worker starts; slow only when building.
        with phase("index", quiet_below=1.0 if indexed else 0.0) as timing, _open_indexed(path) as fasta:
            _check_index_fits(fasta, path, original)
            lengths = {name: len(record) for name, record in fasta.records.items()}
            _check_has_sequence(fasta, lengths, original)
            timing.detail = (f"{'read' if indexed else 'built'} {path}.fai: {counted(len(lengths), 'record')}, "
                             f"{human_size(sum(lengths.values()), 'bp')}")
    except InputError as err:
        if copy is None:
            raise
        for junk in (copy, Path(f"{copy}.fai")):  # a bad copy must not be found again next run
            junk.unlink(missing_ok=True)
        raise InputError(str(err).replace(str(copy), f"{original} (once decompressed)")) from err
    return path, lengths


def _stale_index(fai: Path, source: Path, why: str) -> InputError:
    return InputError(f"the index {fai} does not match {source}: {why}; the FASTA changed after it was indexed. "
                      f"Delete the stale index (rm {fai}) and run again to rebuild it.")


def _check_index_fits(fasta: pyfaidx.Fasta, path: Path, source: Path) -> None:
    """Refuse a ``.fai`` whose records end past the end of a plain FASTA (one written for an older,
    longer version of the file): pyfaidx would silently return short sequences."""
    if is_gzip(path):
        return  # bgzip: the .fai holds uncompressed offsets, checked on read by FastaGenome.fetch
    size = path.stat().st_size
    for name, entry in fasta.faidx.index.items():
        if entry.rlen == 0:
            continue
        last = entry.offset + (entry.rlen - 1) // entry.lenc * entry.lenb + (entry.rlen - 1) % entry.lenc
        if last >= size:
            raise _stale_index(Path(f"{path}.fai"), source,
                               f"record {name!r} ends at byte {last + 1:,}, past the end of the file ({size:,} bytes)")


def _check_has_sequence(fasta: pyfaidx.Fasta, lengths: dict[str, int], source: Path) -> None:
    """Refuse a FASTA with no records, only empty records, or not one A/C/G/T base (all N/IUPAC).

    Reads only until the first base is found: one chunk for any real genome."""
    if not lengths:
        raise InputError(f"{source} holds no FASTA records. Check that it is a FASTA file.")
    total = sum(lengths.values())
    if total == 0:
        raise InputError(f"every record in {source} is empty. The genome needs sequence to train on.")
    for record, length in lengths.items():
        for start in range(0, length, _BASE_PROBE_BP):
            if _BASES & set(fasta[record][start:min(start + _BASE_PROBE_BP, length)]):
                return
    raise InputError(f"{source} holds no A, C, G or T: all {total:,} bp are N or other ambiguous codes, so there "
                     "is nothing to train on or predict. Check that it is the right genome.")


class FastaGenome(GenomeReader):
    """A FASTA genome, plain, gzip or bgzip (see the module docstring); a plain gzip is decompressed
    once into ``cache_dir``. Arguments as for :class:`~bigbird_dna.genome.reader.GenomeReader`."""

    description = "a FASTA file (plain, gzip or bgzip; its first line a '>' record header)"
    _prepared: tuple[Path, dict[str, int]] | None = None

    @classmethod
    def accepts(cls, path: Path) -> bool:
        """A '>' first (a plain FASTA) or the gzip magic bytes (gzip or bgzip, checked when prepared)."""
        with open(path, "rb") as handle:
            head = handle.read(2)
        return head[:1] == b">" or head == GZIP_MAGIC

    def _prepare(self) -> tuple[Path, dict[str, int]]:
        if self._prepared is None:
            self._prepared = prepare_genome(self.path, self.cache_dir)
        return self._prepared

    @property
    def indexed_path(self) -> Path:
        """The file pyfaidx reads (the input, its decompressed copy, or a link in the cache); prepares it."""
        return self._prepare()[0]

    @property
    def record_lengths(self) -> dict[str, int]:
        """Record name to length in bases, in file order; :func:`prepare_genome` runs on first use."""
        return self._prepare()[1]

    def chunks(self, chunk_bp: int = CHUNK_BP) -> Iterator[RecordChunk]:
        """:func:`~bigbird_dna.genome.fasta_stream.iter_chunks` of the file itself, upper-cased."""
        for chunk in iter_chunks(self.path, chunk_bp):
            yield dataclasses.replace(chunk, seq=chunk.seq.upper())

    def _open(self) -> pyfaidx.Fasta:
        return _open_indexed(self.indexed_path)

    def _read(self, handle: pyfaidx.Fasta, record: str, start: int, end: int) -> str:
        try:
            seq = handle[record][start:end]
        except ValueError as err:
            # pyfaidx 0.9 (bgzip) starts a read whose first byte opens a BGZF block in the block before,
            # at offset 65536 when that block is full, as NCBI's and Biopython's writers make them: an
            # invalid virtual offset. One base earlier lies inside the earlier block.
            if start == 0 or "within_block_offset" not in str(err):
                raise
            seq = handle[record][start - 1:end][1:]
        if len(seq) != end - start:  # pyfaidx reads past the end of a shrunken file without a word
            fai = Path(f"{self.indexed_path}.fai")
            raise _stale_index(fai, self.path, f"{record}:{start}-{end} read {len(seq)} of {end - start} bases")
        return seq
