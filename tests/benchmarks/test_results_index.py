"""The committed results: every file in the ``<date>_<machine>/`` layout, listed by the generated
index, and no command in them naming an absolute path of the machine that ran it."""
import json

import pytest

from benchmarks.common.results import ABSOLUTE_PATH, RESULTS
from benchmarks.index_results import INDEX, index_text


def commands(record):
    """Every ``command`` string in a parsed results file, at any depth."""
    if isinstance(record, dict):
        for key, value in record.items():
            if key == "command" and isinstance(value, str):
                yield value
            else:
                yield from commands(value)
    elif isinstance(record, list):
        for value in record:
            yield from commands(value)


def test_the_committed_index_lists_the_committed_files():
    assert INDEX.read_text() == index_text(), "the index is out of date: run python benchmarks/index_results.py"


def test_no_recorded_command_names_an_absolute_path():
    found = {str(path.relative_to(RESULTS)): hits for path in sorted(RESULTS.rglob("*.json"))
             if (hits := [c for c in commands(json.loads(path.read_text())) if ABSOLUTE_PATH.search(c)])}
    assert not found, "record commands with benchmarks.common.results.repo_command"


def test_the_path_check_sees_absolute_paths_wherever_they_stand():
    for command in ("/usr/bin/python x.py", "python -m m data.fasta=/tmp/g.fa", "python m {a: /work/a.fa}"):
        assert ABSOLUTE_PATH.search(command), command
    for command in ("python benchmarks/x.py --out outputs/a.json", "task.backbone=<backbone>/export", "zcat a/b/c.gz"):
        assert not ABSOLUTE_PATH.search(command), command


def test_a_file_outside_the_layout_is_an_error_that_names_it(tmp_path):
    results = tmp_path / "benchmarks" / "results"
    (results / "2026-01-02_h100").mkdir(parents=True)
    (results / "2026-01-02_h100" / "attention.json").write_text("{}")
    row = "| 2026-01-02 | h100 | attention | [attention.json](2026-01-02_h100/attention.json) |  |"
    assert row in index_text(results)
    (results / "attention.json").write_text("{}")
    with pytest.raises(ValueError, match="benchmarks/results/attention.json is not in a <YYYY-MM-DD>_<machine>/"):
        index_text(results)
