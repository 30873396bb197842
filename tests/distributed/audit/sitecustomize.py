"""Test-only: on PYTHONPATH, every Python process records the files it opens for writing.

At exit it writes them to ``$BIGBIRD_AUDIT_DIR/<pid>.json`` with its ``LOCAL_RANK``, so a test can
check which DDP rank wrote what. Python-level opens only (builtin ``open``, ``os.open``) and renames.
"""

import atexit
import json
import os
import sys

_folder = os.environ.get("BIGBIRD_AUDIT_DIR")
_written: set[str] = set()
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def _hook(event, args):
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
            (mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
        if writes and isinstance(path, (str, bytes, os.PathLike)):
            _written.add(os.path.abspath(os.fsdecode(path)))
    elif event == "os.rename":
        _written.add(os.path.abspath(os.fsdecode(args[1])))


def _dump():
    record = {"pid": os.getpid(), "local_rank": os.environ.get("LOCAL_RANK", "0"), "argv": sys.argv,
              "written": sorted(_written)}
    with open(os.path.join(_folder, f"{os.getpid()}.json"), "w") as out:
        json.dump(record, out)


if _folder:
    sys.addaudithook(_hook)
    atexit.register(_dump)
