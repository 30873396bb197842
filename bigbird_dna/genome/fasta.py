"""Random access to a genome FASTA: plain, gzip or bgzip, one or many records.

Coordinates are 0-based and half-open (BED convention): ``fetch("chr1", 0, 10)`` returns the first
ten bases of ``chr1``.

Reading goes through pyfaidx, which needs a ``.fai`` index and random access:

- a plain FASTA is indexed in place (or, if its folder is read-only, through a link in the cache);
- a bgzip FASTA is read directly through its ``.fai``/``.gzi`` indexes;
- a plain gzip FASTA cannot be read at random positions, so :func:`prepare_genome` decompresses it
  **once** into a cached, indexed copy (:mod:`bigbird_dna.genome.cache`) and every later run and
  every DataLoader worker reads that copy.

Indexing is the ``index`` phase (:mod:`bigbird_dna.runtime.phases`). A ``.fai`` left from an older
version of the FASTA is refused with the command to delete it, rather than read as short records.

Call :func:`prepare_genome` in the main process before DataLoader workers start: concurrent index
creation clobbers the ``.fai`` (mdshw5/pyfaidx#134). Then open one :class:`Genome` per worker, since
a pyfaidx handle must not be shared across processes (mdshw5/pyfaidx#211): datasets hold a
:class:`GenomeHandle`, which does that for them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyfaidx

from bigbird_dna.errors import InputError
from bigbird_dna.genome.cache import cache_key, decompress_once, default_cache_dir
from bigbird_dna.genome.text import GZIP_MAGIC, is_gzip
from bigbird_dna.runtime.phases import counted, human_size, phase

_BASES = frozenset("ACGTacgt")
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


def prepare_genome(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """Check a FASTA, make it randomly readable and indexed, and return the path to open.

    Args:
        path: FASTA file, plain, gzip or bgzip.
        cache_dir: where decompressed copies of plain-gzip files live (default
            :func:`~bigbird_dna.genome.cache.default_cache_dir`).

    Returns:
        The path that :class:`Genome` should open (the input itself, or its cached copy).

    Raises:
        InputError: the file is missing, empty, not FASTA, malformed, holds no sequence, or has a
            stale ``.fai`` (records past the end of the file); a gzip copy cannot be written or the
            gzip is truncated (see :func:`~bigbird_dna.genome.cache.decompress_once`).
    """
    path = Path(path).expanduser()
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    if path.is_dir():
        raise InputError(f"genome FASTA {path} is a directory, not a file. Set data.fasta=PATH to the FASTA "
                         "file inside it.")
    if not path.is_file():
        raise InputError(f"genome FASTA not found: {path}. Set data.fasta=PATH to an existing FASTA file.")
    if path.stat().st_size == 0:
        raise InputError(f"genome FASTA is empty: {path}. Point data.fasta at a FASTA with sequence records.")
    original, copy = path, None
    if is_gzip(path) and not _is_bgzip(path):
        path = copy = decompress_once(path, cache)
    try:
        with open(path, "rb") as handle:
            first = handle.read(1)
        if not is_gzip(path) and first != b">":
            raise InputError(f"{original} is not a FASTA file: it should start with '>' (a record header).")
        path = _readable_location(path, cache)
        indexed = Path(f"{path}.fai").exists()
        # Builds and checks the .fai once, here, before any worker starts; slow only when building.
        with phase("index", quiet_below=1.0 if indexed else 0.0) as timing, Genome(path) as genome:
            _check_index_fits(genome, original)
            _check_has_sequence(genome, original)
            lengths = genome.record_lengths
            timing.detail = (f"{'read' if indexed else 'built'} {path}.fai: {counted(len(lengths), 'record')}, "
                             f"{human_size(sum(lengths.values()), 'bp')}")
    except InputError as err:
        if copy is None:
            raise
        for junk in (copy, Path(f"{copy}.fai")):  # a bad copy must not be found again next run
            junk.unlink(missing_ok=True)
        raise InputError(str(err).replace(str(copy), f"{original} (once decompressed)")) from err
    return path


def _stale_index(fai: Path, source: Path, why: str) -> InputError:
    return InputError(f"the index {fai} does not match {source}: {why}; the FASTA changed after it was indexed. "
                      f"Delete the stale index (rm {fai}) and run again to rebuild it.")


def _check_index_fits(genome: Genome, source: Path) -> None:
    """Refuse a ``.fai`` whose records end past the end of a plain FASTA (one written for an older,
    longer version of the file): pyfaidx would silently return short sequences."""
    if is_gzip(genome.path):
        return  # bgzip: the .fai holds uncompressed offsets, checked on read by fetch()
    size = genome.path.stat().st_size
    for name, entry in genome.index_entries().items():
        if entry.rlen == 0:
            continue
        last = entry.offset + (entry.rlen - 1) // entry.lenc * entry.lenb + (entry.rlen - 1) % entry.lenc
        if last >= size:
            raise _stale_index(Path(f"{genome.path}.fai"), source,
                               f"record {name!r} ends at byte {last + 1:,}, past the end of the file ({size:,} bytes)")


def _check_has_sequence(genome: Genome, source: Path) -> None:
    """Refuse a FASTA with no records, only empty records, or not one A/C/G/T base (all N/IUPAC).

    Reads only until the first base is found: one chunk for any real genome."""
    if not genome.record_lengths:
        raise InputError(f"{source} holds no FASTA records. Check that it is a FASTA file.")
    total = sum(genome.record_lengths.values())
    if total == 0:
        raise InputError(f"every record in {source} is empty. The genome needs sequence to train on.")
    for record, length in genome.record_lengths.items():
        for start in range(0, length, _BASE_PROBE_BP):
            if _BASES & set(genome.fetch(record, start, min(start + _BASE_PROBE_BP, length))):
                return
    raise InputError(f"{source} holds no A, C, G or T: all {total:,} bp are N or other ambiguous codes, so there "
                     "is nothing to train on or predict. Check that it is the right genome.")


class Genome:
    """Read-only random access to the records of one indexed FASTA.

    Bases come back upper-case (soft-masking is dropped); N and IUPAC codes are kept as they are,
    N is never mapped to a base.

    Args:
        path: a path returned by :func:`prepare_genome`.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        try:
            self._fasta = pyfaidx.Fasta(
                str(self.path),
                sequence_always_upper=True,
                as_raw=True,
                rebuild=False,
                build_index=True,
            )
        except (pyfaidx.FastaIndexingError, pyfaidx.UnsupportedCompressionFormat, ValueError) as err:
            raise InputError(f"malformed FASTA {self.path}: {str(err).rstrip('.')}. Fix the file "
                             "(every line of a record but its last must have the same length).") from err
        self.record_lengths: dict[str, int] = {name: len(rec) for name, rec in self._fasta.records.items()}

    def fetch(self, record: str, start: int, end: int) -> str:
        """Bases ``[start, end)`` of ``record`` (0-based, half-open)."""
        length = self.record_lengths.get(record)
        if length is None:
            raise InputError(f"contig {record!r} is not in {self.path}. Known contigs: "
                             f"{', '.join(list(self.record_lengths)[:10])}.")
        if not 0 <= start <= end <= length:
            raise InputError(f"interval {record}:{start}-{end} runs outside the contig, which is "
                             f"{length} bp long (0-based, half-open coordinates).")
        seq = self._fasta[record][start:end]
        if len(seq) != end - start:  # pyfaidx reads past the end of a shrunken file without a word
            raise _stale_index(Path(f"{self.path}.fai"), self.path, f"{record}:{start}-{end} read {len(seq)} of "
                               f"{end - start} bases")
        return seq

    def index_entries(self) -> dict:
        """pyfaidx's ``.fai`` entries by record: ``offset``, ``rlen``, ``lenc``, ``lenb`` (bytes)."""
        return dict(self._fasta.faidx.index)

    def close(self) -> None:
        self._fasta.close()

    def __enter__(self) -> "Genome":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class GenomeHandle:
    """The process-local :class:`Genome` of one FASTA, for datasets that DataLoader workers copy.

    :meth:`get` opens the genome on first use in each process (a handle inherited through fork
    shares its file offset with the parent, pyfaidx#211), and pickling drops the open handle, so a
    dataset holding a ``GenomeHandle`` can be sent to workers as it is.

    Args:
        fasta: a path returned by :func:`prepare_genome`.
    """

    def __init__(self, fasta: str | os.PathLike):
        self.fasta = str(fasta)
        self._genome: Genome | None = None
        self._pid: int | None = None

    def get(self) -> Genome:
        """This process's open :class:`Genome`."""
        if self._genome is None or self._pid != os.getpid():
            self._genome, self._pid = Genome(self.fasta), os.getpid()
        return self._genome

    @property
    def opened_by(self) -> int | None:
        """The process id that opened the current genome, or ``None`` while none is open."""
        return self._pid

    def close(self) -> None:
        if self._genome is not None and self._pid == os.getpid():
            self._genome.close()
        self._genome, self._pid = None, None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_genome": None, "_pid": None}
