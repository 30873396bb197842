"""Write a file so that readers see either nothing or the whole file, never a partial one."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` through a uniquely named temporary file in the same folder, then
    rename it into place. The temporary file is removed if writing fails; concurrent writers (DDP
    ranks) never share a temporary name. The file is made world-readable (mkstemp gives 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
