"""The GPU suite measures a committed tree: on a dirty one it refuses (one ``error:`` line, exit
2) unless ``--allow-dirty`` or ``--dry-run``, which flag every result file ``"dirty": true`` with
the ``git status --porcelain`` text. Run in a throwaway git repository holding this checkout's
benchmark scripts (committed there), with ``--only env`` so that no benchmark runs."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args], cwd=repo,
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    root = tmp_path / "repo"
    shutil.copytree(REPO / "benchmarks", root / "benchmarks", ignore=shutil.ignore_patterns("results", "__pycache__"))
    shutil.copy(REPO / ".gitignore", root / ".gitignore")  # .whl/ and outputs/ among what git ignores
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "benchmarks")
    return root


def suite(repo: Path, out: Path, *flags: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OUT": str(out), "PYTHON": sys.executable}
    env.pop("SUITE_GIT_STATE", None)
    return subprocess.run(["bash", "benchmarks/gpu_suite.sh", *flags], check=False, cwd=repo, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_dirty_tree_is_refused_with_one_error_line(repo, tmp_path):
    (repo / "stray.txt").write_text("uncommitted\n")
    (repo / ".whl").mkdir()  # ignored, like the wheels the suite installs: not dirty
    result = suite(repo, tmp_path / "out")
    lines = (result.stdout + result.stderr).strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and lines[0].startswith("error:"), lines
    assert "stray.txt" in lines[0] and "--allow-dirty" in lines[0]
    assert not (tmp_path / "out").exists()  # nothing ran, nothing written


def test_allow_dirty_and_dry_run_flag_every_result_file(repo, tmp_path):
    (repo / "stray.txt").write_text("uncommitted\n")
    for flags in (["--dry-run"], ["--allow-dirty"]):
        out = tmp_path / flags[0].strip("-")
        result = suite(repo, out, *flags, "--only", "env")
        assert result.returncode == 0, result.stderr[-3000:]
        files = [out / "git.json", out / "env.json", out / "gpu_suite.json"]
        for path in files:
            record = json.loads(path.read_text())
            assert record["dirty"] is True and record["git_status"] == "?? stray.txt", path
            assert record["commit"] == git(repo, "rev-parse", "HEAD").strip()
        assert [s["step"] for s in json.loads(files[2].read_text())["steps"]] == ["env"]


def test_a_clean_tree_runs_and_neither_its_output_folder_nor_its_results_make_it_dirty(repo):
    """The second call of a GPU window finds the first call's output folder and results file."""
    for call in ("first", "second"):
        out = repo / "outputs" / "gpu_suite" / call  # inside the tree, as the default is
        result = suite(repo, out, "--only", "env")
        assert result.returncode == 0, result.stderr[-3000:]
        merged = json.loads((out / "gpu_suite.json").read_text())
        assert merged["dirty"] is False and merged["git_status"] == ""
        assert json.loads((out / "env.json").read_text())["dirty"] is False
    copies = list((repo / "benchmarks" / "results").glob("*_*/gpu_suite-*.json"))
    assert copies and json.loads(copies[0].read_text())["commit"] == merged["commit"]


def test_unknown_arguments_and_steps_are_usage_errors(repo, tmp_path):
    for flags in (["--fast"], ["--only", "nosuchstep"]):
        result = suite(repo, tmp_path / "out", *flags)
        assert result.returncode == 2 and result.stderr.startswith("error:"), result.stderr


def provenance(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "benchmarks.common.provenance", *args], check=False, cwd=repo,
                          capture_output=True, text=True, timeout=60)


def test_a_manifest_vouches_for_a_copy_whose_git_metadata_is_gone_or_stale(repo, tmp_path):
    """A device gets a copy of the tree; its .git may be stale or missing. The manifest written here
    after the last commit (in .whl/, which travels) is checked against the files' contents."""
    commit = git(repo, "rev-parse", "HEAD").strip()
    assert provenance(repo, "manifest").returncode == 0
    copy = tmp_path / "device"
    shutil.copytree(repo, copy, ignore=shutil.ignore_patterns(".git"))  # no git metadata at all
    state = tmp_path / "git.json"
    checked = provenance(copy, "check", str(state))
    assert checked.returncode == 0, checked.stderr
    recorded = json.loads(state.read_text())
    assert recorded["commit"] == commit and not recorded["dirty"] and recorded["verified_by"].startswith("manifest")

    with open(copy / "benchmarks" / "common" / "timing.py", "a") as changed:
        changed.write("# edited on the device\n")
    refused = provenance(copy, "check", str(state))
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "benchmarks/common/timing.py" in lines[0]
    assert "benchmarks.common.provenance manifest" in lines[0]

    (repo / "stray.txt").write_text("uncommitted\n")  # no manifest for a dirty tree
    refused = provenance(repo, "manifest")
    assert refused.returncode == 2 and refused.stderr.startswith("error:")
