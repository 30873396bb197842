"""Write files and folders so that readers see either nothing or the whole thing, never a part.

Every writer goes through a uniquely named temporary sibling (same folder, so the final rename is
atomic; concurrent writers such as DDP ranks never share a name), fsyncs it, renames it into place,
and removes it if anything fails. New files and folders get the permissions the process umask
allows (``0o666`` / ``0o777`` minus the umask), like a plain ``open`` or ``mkdir`` would, rather than
the private ``0o600`` / ``0o700`` of ``mkstemp`` / ``mkdtemp``.

- :func:`atomic_paths`: temporary paths for writers that open files themselves (h5py, several
  outputs that must appear together);
- :func:`atomic_file`: an open handle;
- :func:`write_text_atomic`: a whole text at once;
- :func:`atomic_directory`: a folder of files (an export);
- :func:`ensure_writable_dir`: prove an output folder writable before any work starts;
- :func:`disk_full_cause` and :func:`disk_full_error`: recognise and report a write that ran out of space.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Iterator, Sequence

from bigbird_dna.errors import InputError


def current_umask() -> int:
    """The process umask, read without changing it where Linux allows (``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)  # elsewhere: set and restore (not thread-safe, but only a fallback)
    os.umask(mask)
    return mask


def follow_umask(path: str | os.PathLike) -> None:
    """Give a file another library created (safetensors writes ``0600``) the permissions a plain
    ``open`` would have: ``0o666`` minus the umask, so an export can be shared."""
    os.chmod(path, 0o666 & ~current_umask())


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextmanager
def atomic_paths(paths: Sequence[str | os.PathLike]) -> Iterator[list[Path]]:
    """Temporary paths to write ``paths`` through: on success each is fsynced and renamed into place
    (all together, at the end); on any error every temporary file is deleted, so no partial output
    appears under a final name. The temporary files exist (empty) when yielded."""
    finals = [Path(path) for path in paths]
    temporary: list[Path] = []
    try:
        for path in finals:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
            temporary.append(Path(tmp))
            try:
                os.fchmod(fd, 0o666 & ~current_umask())
            finally:
                os.close(fd)
        yield list(temporary)
        for tmp, path in zip(temporary, finals):
            _fsync(tmp)
            os.replace(tmp, path)
    finally:
        for tmp in temporary:
            tmp.unlink(missing_ok=True)


@contextmanager
def atomic_file(path: str | os.PathLike, mode: str = "w") -> Iterator[IO]:
    """An open handle (``mode`` ``"w"`` or ``"wb"``) whose file appears at ``path`` only once the
    ``with`` block ends without an error."""
    with atomic_paths([path]) as (tmp,), open(tmp, mode) as handle:
        yield handle


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_file`) and return the path."""
    with atomic_file(path, "w") as handle:
        handle.write(text)
    return Path(path)


@contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """A staging folder to fill; when the ``with`` block ends without an error its files are fsynced
    and it replaces ``path`` (an existing folder there is retired first). On an error the staging
    folder is deleted and ``path`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent))
    try:
        os.chmod(staging, 0o777 & ~current_umask())
        yield staging
        for item in staging.rglob("*"):
            if item.is_file():
                _fsync(item)
        if path.exists():
            retired = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".old", dir=path.parent))
            os.replace(path, retired)  # an empty folder is replaced by the old one
            os.replace(staging, path)
            shutil.rmtree(retired, ignore_errors=True)
        else:
            os.replace(staging, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# Errors that mean "the disk (or the quota, or the file size limit) is full".
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def disk_full_cause(err: BaseException) -> OSError | None:
    """The out-of-space ``OSError`` behind ``err``, if any (torch.save reports one as a RuntimeError
    whose context is the OSError)."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in DISK_FULL:
            return err
        err = err.__cause__ or err.__context__
    return None


def disk_full_error(path: str | os.PathLike, err: OSError, what: str) -> InputError:
    """The one-line error of a write that ran out of space."""
    return InputError(f"no space left to write {what} {path} ({err.strerror or err}); nothing was written under "
                      "that name and earlier files are intact. Free space (or move the run with hydra.run.dir=...) "
                      "and resume with ckpt_path=last.")


def ensure_writable_dir(path: str | Path) -> Path:
    """Create ``path`` if needed and prove it is writable, or raise :class:`InputError`."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".write_test.{os.getpid()}"  # per process: DDP ranks may probe at once
        probe.write_text("ok")
        probe.unlink()
    except OSError as err:
        raise InputError(f"cannot write to the output directory {path}: {err.strerror or err}. Choose a "
                         "writable one with paths.log_dir=DIR or hydra.run.dir=DIR.") from err
    return path


def check_new_output_dir(out: str | os.PathLike) -> Path:
    """``out`` itself, if it does not exist or is an empty folder; else an :class:`InputError`."""
    out = Path(out).expanduser()
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} is a file; give a folder path that does not exist yet.")
    if out.is_dir() and any(out.iterdir()):
        raise InputError(f"--out {out} already exists and is not empty; choose a new folder, or remove this one "
                         "first (nothing is ever written over an earlier one).")
    return out
