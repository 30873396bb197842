"""Atomic writers: a failure leaves neither a file under the final name nor a temporary file, and
new files and folders get the permissions of the umask."""

from __future__ import annotations

import os
import stat

import pytest

from bigbird_dna.runtime.atomic import atomic_directory, atomic_file, atomic_paths, current_umask, write_text_atomic


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    yield
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_text_appears_whole_and_replaces_the_old_one(tmp_path):
    path = write_text_atomic(tmp_path / "sub" / "a.txt", "one")
    write_text_atomic(path, "two")
    assert path.read_text() == "two"
    assert sorted(p.name for p in path.parent.iterdir()) == ["a.txt"]


def test_a_failure_mid_write_leaves_no_file_and_no_temporary_file(tmp_path):
    with pytest.raises(RuntimeError), atomic_file(tmp_path / "a.bin", "wb") as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert list(tmp_path.iterdir()) == []


def test_a_failure_keeps_the_old_file(tmp_path):
    path = write_text_atomic(tmp_path / "a.txt", "old")
    with pytest.raises(KeyboardInterrupt), atomic_file(path) as handle:
        handle.write("new")
        raise KeyboardInterrupt
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_several_paths_appear_together_or_not_at_all(tmp_path):
    finals = [tmp_path / "out.tsv", tmp_path / "out.bed"]
    with pytest.raises(ValueError), atomic_paths(finals) as temporary:
        assert len(set(temporary)) == 2 and all(t.parent == tmp_path and t.exists() for t in temporary)
        temporary[0].write_text("rows")
        raise ValueError
    assert list(tmp_path.iterdir()) == []
    with atomic_paths(finals) as (tsv, bed):
        tsv.write_text("rows")
        bed.write_text("hits")
    assert [p.read_text() for p in finals] == ["rows", "hits"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bed", "out.tsv"]


def test_files_follow_the_umask_not_a_fixed_mode(tmp_path, umask_027):
    assert current_umask() == 0o027
    assert _mode(write_text_atomic(tmp_path / "a.txt", "x")) == 0o640
    with atomic_file(tmp_path / "b.bin", "wb") as handle:
        handle.write(b"x")
    assert _mode(tmp_path / "b.bin") == 0o640
    os.umask(0o002)
    assert _mode(write_text_atomic(tmp_path / "c.txt", "x")) == 0o664


def test_a_directory_appears_whole_with_umask_permissions(tmp_path, umask_027):
    with atomic_directory(tmp_path / "export") as staging:
        (staging / "a.txt").write_text("a")
        assert not (tmp_path / "export").exists()
    assert _mode(tmp_path / "export") == 0o750
    assert [p.name for p in tmp_path.iterdir()] == ["export"]
    assert (tmp_path / "export" / "a.txt").read_text() == "a"


def test_a_failed_directory_write_keeps_the_old_directory_and_leaves_nothing_else(tmp_path):
    with atomic_directory(tmp_path / "export") as staging:
        (staging / "a.txt").write_text("old")
    with pytest.raises(OSError), atomic_directory(tmp_path / "export") as staging:
        (staging / "a.txt").write_text("new")
        raise OSError("no space left")
    assert (tmp_path / "export" / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["export"]
    with atomic_directory(tmp_path / "export") as staging:
        (staging / "b.txt").write_text("new")
    assert [p.name for p in (tmp_path / "export").iterdir()] == ["b.txt"]  # replaced, not merged
    assert [p.name for p in tmp_path.iterdir()] == ["export"]
