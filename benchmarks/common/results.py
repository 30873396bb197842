"""Where a result file goes, and the command it records.

Layout: ``benchmarks/results/<YYYY-MM-DD>_<machine>/<benchmark>.json``, the UTC date of the run and
a short name of the machine (:func:`machine_slug`: ``h100``, ``h200``, ``cpu-2core``), so that runs
of other days and machines never overwrite each other and the folder says what a number is from.
``python benchmarks/index_results.py`` lists every file in ``benchmarks/results/README.md``.

Commands are recorded relative to the repository (:func:`repo_command`): a path inside it becomes
its repository-relative path, one outside it (a scratch folder, the interpreter) its file name, so
that a result names no folder of the machine that ran it.
"""
from __future__ import annotations

import datetime
import json
import os
import re
import sys
from pathlib import Path

from benchmarks.common import REPO

RESULTS = REPO / "benchmarks" / "results"
VENDOR_WORDS = {"nvidia", "geforce", "tesla", "amd", "radeon", "instinct"}
# an absolute path: "/" at the start of a word or after "=", up to a space, comma, quote or bracket
ABSOLUTE_PATH = re.compile(r"(?<![\w.<>/~-])/[^\s,;:'\"(){}\[\]]+")


def machine_slug(record: dict) -> str:
    """A short, path-safe name of the machine in a record of :func:`harness.machine` (or of
    :func:`harness.environment`): the GPU model for CUDA (``h100`` from "NVIDIA H100 80GB HBM3",
    ``rtx-4090`` from "NVIDIA GeForce RTX 4090"), else ``cpu-<cores>core``."""
    if record.get("device_type") == "cuda" and record.get("device"):
        model = []
        for word in re.split(r"[\s_-]+", record["device"].lower()):
            if word and word not in VENDOR_WORDS:
                model.append(re.sub(r"[^a-z0-9.]", "", word))
                if any(c.isdigit() for c in word):  # the model number ends the name
                    break
        return "-".join(filter(None, model)) or "gpu"
    return f"cpu-{record.get('cpus') or os.cpu_count()}core"


def today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


def results_dir(record: dict, date: str | None = None) -> Path:
    """``benchmarks/results/<date>_<machine>/`` (``date``: ``YYYY-MM-DD``, default today, UTC)."""
    return RESULTS / f"{date or today()}_{machine_slug(record)}"


def default_out(benchmark: str, record: dict | None = None, device: str = "cpu") -> Path:
    """``<results_dir>/<benchmark>.json`` for the machine of ``record`` (the environment a script
    already built) or, without one, of :func:`harness.machine` of ``device`` (``auto``: CUDA when
    there is one)."""
    if record is None:
        import torch

        from benchmarks.common.harness import machine

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        record = machine(device)
    return results_dir(record) / f"{benchmark}.json"


def add_out_argument(parser, benchmark: str) -> None:
    """``--out PATH``: the results file, by default :func:`default_out` of ``benchmark``."""
    parser.add_argument("--out", type=Path, default=None,
                        help=f"results file (default: benchmarks/results/<date>_<machine>/{benchmark}.json)")


def repo_command(command: str | list, root: Path = REPO) -> str:
    """``command`` (a string or an argv list) with each absolute path relative to ``root`` when it
    lies inside it, else cut to its file name (``/usr/bin/python3`` -> ``python3``)."""
    text = command if isinstance(command, str) else " ".join(map(str, command))

    def relative(match: re.Match) -> str:
        path = Path(match[0])
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            return path.name or match[0]
    return ABSOLUTE_PATH.sub(relative, text)


def script_command(script: str, argv: list[str] | None) -> str:
    """How a script was run: ``python benchmarks/<script> <args>`` (``argv`` None: ``sys.argv``),
    relative to the repository."""
    return repo_command(["python", script, *(sys.argv[1:] if argv is None else argv)])


def write_json(path: Path, data) -> Path:
    """``data`` as indented JSON in ``path`` (folders created; written whole or not at all)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.partial")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    tmp.replace(path)
    return path
