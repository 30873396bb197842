"""Random access to a genome FASTA: plain, gzip or bgzip, one or many records.

Coordinates are 0-based and half-open (BED convention): ``fetch("chr1", 0, 10)`` returns the first
ten bases of ``chr1``.

Reading goes through pyfaidx, which needs a ``.fai`` index and random access:

- a plain FASTA is indexed in place (or, if its folder is read-only, through a link in the cache);
- a bgzip FASTA is read directly through its ``.fai``/``.gzi`` indexes;
- a plain gzip FASTA cannot be read at random positions, so :func:`prepare_genome` decompresses it
  **once** into a cached, indexed copy (keyed by path, size and modification time) and every later
  run and every DataLoader worker reads that copy.

Call :func:`prepare_genome` in the main process before DataLoader workers start: concurrent index
creation clobbers the ``.fai`` (mdshw5/pyfaidx#134). Then open one :class:`Genome` per worker, since
a pyfaidx handle must not be shared across processes (mdshw5/pyfaidx#211): datasets hold a
:class:`GenomeHandle`, which does that for them.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from pathlib import Path

import pyfaidx

from bigbird_dna.errors import InputError
from bigbird_dna.genome.text import GZIP_MAGIC, is_gzip
from bigbird_dna.runtime.atomic import atomic_file

_BASES = frozenset("ACGTacgt")
_BASE_PROBE_BP = 1 << 20  # bases read at a time while looking for a first real base


def default_cache_dir() -> Path:
    """Folder for decompressed genome copies: ``$BIGBIRD_DNA_CACHE`` or ``~/.cache/bigbird_dna``."""
    return Path(os.environ.get("BIGBIRD_DNA_CACHE", Path.home() / ".cache" / "bigbird_dna"))


def _is_bgzip(path: Path) -> bool:
    """bgzip files are gzip members whose extra field carries the ``BC`` subfield."""
    with open(path, "rb") as handle:
        header = handle.read(16)
    return header[:2] == GZIP_MAGIC and header[3] & 4 != 0 and header[12:14] == b"BC"


def _cache_key(path: Path) -> str:
    stat = path.stat()
    text = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def _decompress_once(path: Path, cache_dir: Path) -> Path:
    """Decompress a plain-gzip FASTA into the cache (atomically) unless a copy is already there."""
    target = cache_dir / f"{path.name.removesuffix('.gz')}.{_cache_key(path)}.fa"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        with atomic_file(target, "wb") as out, gzip.open(path, "rb") as src:
            shutil.copyfileobj(src, out, length=1 << 20)
    except (OSError, EOFError) as err:
        raise InputError(f"cannot decompress {path}: {err}. Check that the file is a complete gzip.") from err
    return target


def _readable_location(path: Path, cache_dir: Path) -> Path:
    """pyfaidx writes ``.fai`` beside the FASTA; use a link in the cache if that folder is read-only."""
    if os.access(path.parent, os.W_OK) or Path(f"{path}.fai").exists():
        return path
    cache_dir.mkdir(parents=True, exist_ok=True)
    link = cache_dir / f"{path.name}.{_cache_key(path)}{''.join(path.suffixes[-1:])}"
    if not link.exists():
        link.symlink_to(path.resolve())
    return link


def prepare_genome(path: str | os.PathLike, cache_dir: str | os.PathLike | None = None) -> Path:
    """Check a FASTA, make it randomly readable and indexed, and return the path to open.

    Args:
        path: FASTA file, plain, gzip or bgzip.
        cache_dir: where decompressed copies of plain-gzip files live (default
            :func:`default_cache_dir`).

    Returns:
        The path that :class:`Genome` should open (the input itself, or its cached copy).

    Raises:
        InputError: the file is missing, empty, not FASTA, malformed, or holds no sequence.
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
        path = copy = _decompress_once(path, cache)
    try:
        with open(path, "rb") as handle:
            first = handle.read(1)
        if not is_gzip(path) and first != b">":
            raise InputError(f"{original} is not a FASTA file: it should start with '>' (a record header).")
        path = _readable_location(path, cache)
        with Genome(path) as genome:  # builds and validates the .fai once, here, before any worker starts
            _check_has_sequence(genome, original)
    except InputError as err:
        if copy is None:
            raise
        for junk in (copy, Path(f"{copy}.fai")):  # a bad copy must not be found again next run
            junk.unlink(missing_ok=True)
        raise InputError(str(err).replace(str(copy), f"{original} (once decompressed)")) from err
    return path


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

    Args:
        path: a path returned by :func:`prepare_genome`.
        uppercase: upper-case soft-masked (lowercase) bases. N and IUPAC codes are kept as they are;
            N is never mapped to a base.
    """

    def __init__(self, path: str | os.PathLike, uppercase: bool = True):
        self.path = Path(path)
        self.uppercase = uppercase
        try:
            self._fasta = pyfaidx.Fasta(
                str(self.path),
                sequence_always_upper=uppercase,
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
        return self._fasta[record][start:end]

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
        uppercase: as for :class:`Genome`.
    """

    def __init__(self, fasta: str | os.PathLike, uppercase: bool = True):
        self.fasta = str(fasta)
        self.uppercase = uppercase
        self._genome: Genome | None = None
        self._pid: int | None = None

    def get(self) -> Genome:
        """This process's open :class:`Genome`."""
        if self._genome is None or self._pid != os.getpid():
            self._genome, self._pid = Genome(self.fasta, uppercase=self.uppercase), os.getpid()
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
