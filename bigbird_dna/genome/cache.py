"""The genome cache folder, and the one-time decompression of a plain-gzip FASTA into it.

A plain gzip cannot be read at random positions, and pyfaidx cannot index a FASTA with Windows line
endings (CRLF), so :func:`plain_copy_once` writes a plain copy (decompressed, line endings ``\n``)
into the cache folder (``data.cache_dir``, else ``$BIGBIRD_DNA_CACHE``, else
``~/.cache/bigbird_dna``), keyed by the input's path, size and modification time, so later runs and
every DataLoader worker read that copy. For hg38 that is about 3.2 GB written once: the log says
where it goes and how large it will be before it starts, progress every 30 s, and bytes written and
the rate at the end (the ``decompress`` phase, :mod:`bigbird_dna.runtime.phases`).

The copy is written atomically (a temporary sibling, renamed at the end): a run stopped by a full
disk, a truncated download or Ctrl-C leaves no partial file that a later run would take for a
complete one. Each failure gets its own message: a full disk names the cache folder, the bytes
needed and the two settings that move it; a truncated or corrupt gzip says to download it again.
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import os
import shutil
import time
import zlib
from pathlib import Path

from bigbird_dna.errors import InputError
from bigbird_dna.genome.text import is_gzip
from bigbird_dna.runtime.atomic import atomic_file, disk_full_cause
from bigbird_dna.runtime.phases import human_size, phase

log = logging.getLogger(__name__)

CACHE_ENV = "BIGBIRD_DNA_CACHE"
_CHUNK = 1 << 20
_PROGRESS_EVERY_S = 30.0


def default_cache_dir() -> Path:
    """Folder for decompressed genome copies: ``$BIGBIRD_DNA_CACHE`` or ``~/.cache/bigbird_dna``."""
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "bigbird_dna"))


def cache_key(path: Path) -> str:
    """A short key that changes when ``path`` is replaced or modified (path, size, mtime)."""
    stat = path.stat()
    text = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}"
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def expected_size(path: Path) -> int:
    """About the size of ``path``'s plain copy: a plain file's own size (at most, with ``\r`` dropped);
    for a gzip a lower bound, its trailer's ISIZE (the size modulo 4 GiB, of the last member only) or
    the compressed size where that is larger (a FASTA always compresses)."""
    if not is_gzip(path):
        return path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(-4, os.SEEK_END)
        isize = int.from_bytes(handle.read(4), "little")
    return max(isize, path.stat().st_size)


def disk_full_message(cache_dir: Path, source: Path, needed: int, written: int | None = None) -> str:
    """The one-line error of a cache folder without room for ``source``'s decompressed copy."""
    so_far = f" after writing {human_size(written)}" if written is not None else ""
    return (f"no space left in the cache folder {cache_dir} to decompress {source}{so_far}: it needs at least "
            f"{human_size(needed)} ({needed:,} bytes). Set {CACHE_ENV}=/a/folder/with/room (or the config key "
            "data.cache_dir=/a/folder/with/room) and run again; nothing partial was left behind.")


def has_crlf(path: Path) -> bool:
    """Whether the FASTA ``path`` (plain or gzip) ends its lines with ``\r\n``, from its first MiB."""
    with (gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")) as handle:
        try:
            return b"\r\n" in handle.read(_CHUNK)
        except (EOFError, gzip.BadGzipFile, zlib.error):
            return False  # a broken gzip: plain_copy_once names the problem


def plain_copy_once(path: Path, cache_dir: Path) -> Path:
    """The plain copy of the FASTA ``path`` (gzip decompressed, ``\r`` dropped) in ``cache_dir``,
    written now (atomically) unless an earlier run left it there.

    Raises:
        InputError: the cache folder has no room (checked first, and on ``ENOSPC``/``EDQUOT``), the
            gzip is truncated or corrupt, or the copy cannot be written.
    """
    target = cache_dir / f"{path.name.removesuffix('.gz')}.{cache_key(path)}.fa"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    needed = expected_size(path)
    if shutil.disk_usage(cache_dir).free < needed:
        raise InputError(disk_full_message(cache_dir, path, needed))
    gzipped = is_gzip(path)
    doing = "decompressing" if gzipped else "rewriting with \\n line endings"
    log.info("%s %s (%s) once into the cache: %s, at least %s (set %s or data.cache_dir to put it elsewhere)",
             doing, path, human_size(path.stat().st_size), target, human_size(needed), CACHE_ENV)
    written = 0
    try:
        with phase("decompress" if gzipped else "line endings") as timing, atomic_file(target, "wb") as out, \
                (gzip.open(path, "rb") if gzipped else open(path, "rb")) as src:
            last_report = timing.started
            while chunk := src.read(_CHUNK):
                chunk = chunk.replace(b"\r", b"")  # CRLF -> LF; a lone CR is no FASTA character either
                out.write(chunk)
                written += len(chunk)
                if time.monotonic() - last_report >= _PROGRESS_EVERY_S:
                    last_report = time.monotonic()
                    log.info("%s: %s of at least %s written (%.0f s)", doing, human_size(written),
                             human_size(needed), timing.elapsed())
            timing.detail = (f"wrote {human_size(written)} to {target} "
                             f"({human_size(written / max(timing.elapsed(), 1e-9))}/s)")
    except EOFError as err:
        raise InputError(f"{path} ends early: the file is truncated; download it again ({err}).") from err
    except (gzip.BadGzipFile, zlib.error) as err:
        raise InputError(f"{path} is not a valid gzip (corrupt data: {err}); download it again.") from err
    except OSError as err:
        if disk_full_cause(err) is not None:
            raise InputError(disk_full_message(cache_dir, path, max(needed, written), written)) from err
        raise InputError(f"cannot copy {path} into the cache folder {cache_dir}: {err}. Set {CACHE_ENV} "
                         "or data.cache_dir to a writable folder.") from err
    return target
