"""Rules that keep one concept in one place, checked by reading the source:

- no output kind (sigmoid, softmax, masked LM) is decided by a task's name: it is recorded in
  every export and read from there (``bigbird_dna/model/outputs.py``);
- no module is found by globbing files minus a hand-kept deny-list: predictors, tasks and formats
  are registered explicitly.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import bigbird_dna

PACKAGE = Path(bigbird_dna.__file__).parent
# a comparison of a task name with a literal: task == "classify", self.task != "mlm", task in ("a", ...)
TASK_BRANCH = re.compile(r"""\btask(_name)?\s*(==|!=|\bin\b|\bnot in\b)\s*[("'\[]""")
DENY_LIST = re.compile(r"""^\s*NOT_[A-Z_]+\s*=\s*[{(\[]|\.glob\(["']\*\.py["']\)""", re.MULTILINE)


def _sources() -> list[tuple[Path, str]]:
    return [(path, path.read_text()) for path in sorted(PACKAGE.rglob("*.py"))]


def offending_lines(pattern: re.Pattern, sources: list[tuple[Path, str]]) -> list[str]:
    return [f"{path.relative_to(PACKAGE)}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0).strip()}"
            for path, text in sources for match in pattern.finditer(text)]


def test_no_output_kind_is_decided_by_a_task_name():
    assert offending_lines(TASK_BRANCH, _sources()) == []


def test_no_module_is_found_through_a_deny_list():
    assert offending_lines(DENY_LIST, _sources()) == []


@pytest.mark.parametrize("pattern, source", [
    (TASK_BRANCH, 'softmax = export.task in ("classify",)\n'),
    (TASK_BRANCH, 'if self.task != "mlm":\n'),
    (DENY_LIST, 'NOT_PREDICTORS = {"cli", "driver"}\n'),
    (DENY_LIST, 'tasks = [p.stem for p in folder.glob("*.py")]\n'),
])
def test_the_rules_can_fail(pattern, source):
    assert offending_lines(pattern, [(PACKAGE / "x.py", source)]) != []
