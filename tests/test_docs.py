"""The documentation: the site builds with ``mkdocs build --strict`` (broken links, anchors and
docstrings fail it), the README stays a short front page whose first two code blocks are the two
commands a new user runs, every relative link resolves on GitHub, and no two pages repeat a line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

PAGES = sorted([REPO / "README.md", REPO / "ARCHITECTURE.md", REPO / "benchmarks" / "README.md",
                *(REPO / "docs").rglob("*.md")])
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s#]+)(?:#[^)\s]*)?\)")
TRAIN_COMMAND = "pip install torch==2.13.0 && pip install -e . && python -m bigbird_dna.train"


def broken_links(page: Path) -> list[str]:
    """Relative link targets of ``page`` (outside code blocks) that are not files, as GitHub resolves them."""
    prose = FENCE.sub("", page.read_text(encoding="utf-8"))
    return [target for target in LINK.findall(prose) if not (page.parent / target).is_file()]


def build_site(project: Path, site: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=project, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_the_site_builds_strictly_with_the_readme_as_front_page_and_the_api_reference(tmp_path):
    site = tmp_path / "site"
    result = build_site(REPO, site)
    assert result.returncode == 0, f"pip install -e '.[docs]' if mkdocs is missing\n{result.stderr[-4000:]}"
    front = (site / "index.html").read_text(encoding="utf-8")
    assert "Two commands on a fresh machine" in front
    # the README's GitHub link docs/pretraining.md became the site's page
    assert 'href="pretraining/"' in front and (site / "pretraining" / "index.html").is_file()
    api = (site / "api" / "pretrained" / "index.html").read_text(encoding="utf-8")
    assert "from_pretrained" in api and "save_pretrained" in api
    # Sphinx roles in docstrings become code or links, never literal ``:func:`` text
    assert not any(":func:`" in p.read_text(encoding="utf-8") or ":class:`" in p.read_text(encoding="utf-8")
                   for p in (site / "api").rglob("*.html"))


def test_docstring_roles_render_as_links_and_a_missing_target_fails_the_strict_build(tmp_path):
    (tmp_path / "pkgx").mkdir()
    (tmp_path / "pkgx" / "__init__.py").write_text(
        '"""Uses :func:`real` and :func:`~pkgx.core.gone`."""\n\nfrom pkgx.core import real\n')
    (tmp_path / "pkgx" / "core.py").write_text('def real():\n    """Real."""\n')
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# API\n\n::: pkgx\n\n::: pkgx.core.real\n")
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: x\nplugins:\n  - mkdocstrings:\n      handlers:\n        python:\n          paths: [.]\n"
        "          options:\n            extensions:\n"
        f"              - {REPO / 'docs/hooks/sphinx_roles.py'}:SphinxRoles\n")
    result = build_site(tmp_path, tmp_path / "site")
    assert result.returncode != 0 and "names pkgx.core.gone, which does not exist" in result.stderr, result.stderr
    (tmp_path / "pkgx" / "__init__.py").write_text(
        '"""Uses :func:`real`.\n\nA layout::\n\n    file.txt   written by :func:`real`\n"""\n\n'
        'from pkgx.core import real\n')
    result = build_site(tmp_path, tmp_path / "site")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert 'href="#pkgx.core.real"><code>real</code></a>' in page and ":func:" not in page
    assert "written by real" in page and "&lt;autoref" not in page  # inside a code block: plain text


def test_the_readme_is_a_front_page_under_200_lines():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: move detail into docs/"


def test_the_readme_opens_with_the_two_commands_and_ci_runs_the_second():
    blocks = [block.strip() for block in FENCE.findall((REPO / "README.md").read_text(encoding="utf-8"))]
    assert blocks[:2] == [TRAIN_COMMAND, "bash .ci/run"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # the torch pin of the first command is the one CI installs, and CI installs the docs extra
    assert "pip install --quiet torch==2.13.0" in ci
    assert re.search(r'pip install --quiet -e "\.\[[^\]]*\bdocs\b', ci)


def test_every_relative_link_points_to_an_existing_file():
    broken = {str(page.relative_to(REPO)): links for page in PAGES if (links := broken_links(page))}
    assert not broken


def test_the_link_check_catches_a_missing_file(tmp_path):
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text("[a](there.md) [b](gone.md#part) [c](https://example.org/x.md) [d](#here)\n"
                    "```\n[e](inside_code.md)\n```\n")
    assert broken_links(page) == ["gone.md"]


def test_every_guide_is_linked_from_the_readme_and_in_the_site_nav():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for guide in (REPO / "docs").glob("*.md"):
        assert f"(docs/{guide.name})" in readme, guide.name
        assert f": {guide.name}\n" in nav, guide.name
    for page in (REPO / "docs" / "api").glob("*.md"):
        assert f": api/{page.name}\n" in nav, page.name


def test_no_two_pages_repeat_a_line_of_prose_or_a_table_row():
    seen: dict[str, str] = {}
    repeats = []
    for page in PAGES:
        prose = FENCE.sub("", page.read_text(encoding="utf-8"))
        name = str(page.relative_to(REPO))
        for line in {line.strip() for line in prose.splitlines() if len(line.strip()) >= 60}:
            if line in seen:
                repeats.append(f"{seen[line]} and {name}: {line[:80]}")
            seen.setdefault(line, name)
    assert not repeats, "\n".join(repeats)
