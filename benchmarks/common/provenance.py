"""Which tree a benchmark measured: the git commit, and whether the working tree was dirty.

A number only holds up if it can be tied to code. :func:`git_state` reads ``git rev-parse HEAD``
and ``git status --porcelain``; paths that are benchmark outputs, never code, do not count as
dirty: the git-ignored wheel folder ``.whl/``, result files (``benchmarks/results/``: the GPU
suite's first call writes one before its second call checks the tree) and ``$OUT`` when it lies
inside the repository.

The GPU suite checks the tree once, before its first step, and every step reads that record
(``SUITE_GIT_STATE`` names the file) instead of looking again: the steps themselves write files.

A GPU machine may get a copy of the working tree whose git metadata is missing or does not match
it (a run once recorded an older commit than the code it ran). So, before copying, ``manifest`` writes
``.whl/tree.json`` (the wheel folder is copied with the tree): the commit and the git blob hash of
every tracked file, refusing a dirty tree. Where that file exists, ``check`` verifies each tracked
file's content against it instead of asking git; a file that differs or is missing makes the tree
dirty (files the commit does not track are not seen).

    python -m benchmarks.common.provenance manifest      # here, after the last commit, before copying
    python -m benchmarks.common.provenance check OUT/git.json [--allow-dirty] [--ignore PATH ...]

``check`` writes the record and exits 0 on a clean tree; on a dirty one it prints one ``error:``
line and exits 2, unless ``--allow-dirty`` is given (then the record says ``"dirty": true`` with
the ``git status --porcelain`` text). Standard library only: it runs before anything is installed.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import REPO

# benchmark outputs, not code: never make a tree dirty
OUTPUT_PREFIXES = (".whl/", "benchmarks/results/")
STATE_ENV = "SUITE_GIT_STATE"


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    # read-only commands: a copy owned by another user (on a GPU machine) is still this repository
    return subprocess.run(["git", "-c", "safe.directory=*", *args], check=False, cwd=repo, capture_output=True,
                          text=True, timeout=60)


def porcelain_path(line: str) -> str:
    """The path of one ``git status --porcelain`` line (``XY path`` or ``XY old -> new``)."""
    path = line[3:]
    return path.split(" -> ", 1)[1] if " -> " in path else path


def git_state(repo: Path = REPO, ignore: tuple[str, ...] = ()) -> dict:
    """``{"commit", "dirty", "git_status"}`` of ``repo``.

    ``git_status``: the ``git status --porcelain`` lines that count (outputs under
    :data:`OUTPUT_PREFIXES` or ``ignore``, repository-relative prefixes, are dropped), joined by
    newlines. Outside a git work tree: commit None, dirty True and git's message.
    """
    try:
        head = _git(repo, "rev-parse", "HEAD")
        status = _git(repo, "-c", "core.fileMode=false", "status", "--porcelain")  # a copy may drop exec bits
    except (OSError, subprocess.SubprocessError) as err:
        return {"commit": None, "dirty": True, "git_status": f"git unavailable: {err}"}
    if head.returncode or status.returncode:
        message = (head.stderr or status.stderr).strip().splitlines()
        return {"commit": None, "dirty": True, "git_status": f"not a git work tree: {message[0] if message else '?'}"}
    skip = OUTPUT_PREFIXES + tuple(p.rstrip("/") + "/" for p in ignore if p)
    lines = [line for line in status.stdout.splitlines()
             if line.strip() and not porcelain_path(line).strip('"').startswith(skip)]
    return {"commit": head.stdout.strip(), "dirty": bool(lines), "git_status": "\n".join(lines)}


MANIFEST = REPO / ".whl" / "tree.json"


def blob_hash(path: Path) -> str:
    """Git's blob id of a file's bytes (``git hash-object``, no filters)."""
    data = path.read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def write_manifest(repo: Path = REPO, path: Path = MANIFEST) -> dict:
    """Write the commit and every tracked file's blob hash to ``path``; a dirty tree is a
    ``ValueError`` (its message: the one-line refusal)."""
    state = git_state(repo)
    if state["dirty"]:
        raise ValueError(dirty_error(state))
    listing = _git(repo, "ls-files", "-s", "-z").stdout.split("\0")
    files = {}
    for entry in filter(None, listing):
        meta, name = entry.split("\t", 1)
        mode, sha = meta.split()[:2]
        if mode.startswith("100"):  # regular files; not symbolic links or submodules
            files[name] = sha
    manifest = {"commit": state["commit"], "files": files}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(manifest) + "\n")
    tmp.replace(path)
    return manifest


def manifest_state(repo: Path = REPO, path: Path = MANIFEST) -> dict | None:
    """The tree checked against a manifest (``None`` without one): the manifest's commit, and
    dirty when a tracked file's content differs or the file is missing."""
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    changed = [name for name, sha in manifest["files"].items()
               if not (repo / name).is_file() or blob_hash(repo / name) != sha]
    return {"commit": manifest["commit"], "dirty": bool(changed), "verified_by": f"manifest {path.name}",
            "git_status": "\n".join(f" M {name}" for name in changed)}


def recorded_state() -> dict:
    """The suite's record when ``$SUITE_GIT_STATE`` names one (inside a suite step), else the tree now."""
    path = os.environ.get(STATE_ENV)
    if path:
        try:
            state = json.loads(Path(path).read_text())
            return {key: state.get(key) for key in ("commit", "dirty", "git_status")}
        except (OSError, ValueError):
            pass
    return git_state()


def repo_relative(path: str) -> str | None:
    """``path`` relative to the repository, or None when it lies outside."""
    try:
        return Path(path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        return None


def dirty_error(state: dict) -> str:
    """The one-line refusal for a dirty tree."""
    paths = [porcelain_path(line) for line in state["git_status"].splitlines()]
    if state.get("verified_by", "").startswith("manifest"):
        return (f"error: {len(paths)} tracked files differ from the manifest of commit {state['commit'][:12]} "
                f"({', '.join(paths[:3])}): run 'python -m benchmarks.common.provenance manifest' after the last "
                "commit, or pass --allow-dirty to run anyway with every result flagged dirty")
    if state["commit"] is None:
        return (f"error: cannot tell which commit would be measured ({state['git_status']}); "
                "pass --allow-dirty to run anyway with every result flagged dirty")
    shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
    return (f"error: the working tree has uncommitted changes ({shown}): commit them, "
            "or pass --allow-dirty to run anyway with every result flagged dirty")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("manifest", help=f"write {MANIFEST.relative_to(REPO)} for a copy of the tree; refuse a dirty tree")
    check = sub.add_parser("check", help="record the tree in PATH; refuse a dirty one")
    check.add_argument("path", type=Path)
    check.add_argument("--allow-dirty", action="store_true")
    check.add_argument("--ignore", nargs="*", default=[], help="more output paths (absolute or repository-relative)")
    args = parser.parse_args(argv)
    if args.command == "manifest":
        try:
            manifest = write_manifest()
        except ValueError as err:
            print(err, file=sys.stderr)
            return 2
        print(f"wrote {MANIFEST.relative_to(REPO)}: commit {manifest['commit']}, {len(manifest['files'])} files",
              file=sys.stderr)
        return 0
    ignore = tuple(filter(None, (repo_relative(p) if os.path.isabs(p) else p for p in args.ignore)))
    state = manifest_state() or git_state(REPO, ignore)
    if state["dirty"] and not args.allow_dirty:
        print(dirty_error(state), file=sys.stderr)
        return 2
    state["allow_dirty"] = args.allow_dirty
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(state, indent=2) + "\n")
    flag = "dirty (allowed): results flagged" if state["dirty"] else "clean"
    print(f"tree: commit {state['commit']}, {flag}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
