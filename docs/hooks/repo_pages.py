"""MkDocs hook: serve files that live outside ``docs/`` as pages, and keep one text per fact.

``README.md`` is the site's front page (``index.md``), ``ARCHITECTURE.md`` and
``benchmarks/README.md`` are pages of their own; none is copied into ``docs/``. Every page's
relative links are written for GitHub, i.e. relative to the file's place in the repository
(``docs/pretraining.md`` from the README, ``../ARCHITECTURE.md`` from a guide). This hook maps
each such link to the page that serves the target, so the same text works on GitHub and on the
site. A link to a repository file that no page serves is left alone, and ``mkdocs build
--strict`` then fails on it, as it should: it would be broken on the site.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path

from mkdocs.structure.files import File

REPO = Path(__file__).resolve().parents[2]
# site page -> the repository file it serves
SERVED = {"index.md": "README.md", "architecture.md": "ARCHITECTURE.md", "benchmarks.md": "benchmarks/README.md"}
PAGE_OF = {source: page for page, source in SERVED.items()}
# [text](target) or [text](target#anchor), target relative (no scheme, not a bare anchor)
LINK = re.compile(r"\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s#]+)(#[^)\s]*)?\)")


def on_files(files, config):
    for page, source in SERVED.items():
        files.append(File.generated(config, page, content=(REPO / source).read_text(encoding="utf-8")))
    return files


def _site_uri(repo_path: str) -> str | None:
    """The page (docs-relative URI) that serves the repository file ``repo_path``, if any."""
    if repo_path in PAGE_OF:
        return PAGE_OF[repo_path]
    if repo_path.startswith("docs/"):
        return repo_path[len("docs/"):]
    return None


def on_page_markdown(markdown, page, config, files):
    uri = page.file.src_uri
    repo_dir = posixpath.dirname(SERVED.get(uri, "docs/" + uri))

    def relink(match: re.Match) -> str:
        target = _site_uri(posixpath.normpath(posixpath.join(repo_dir, match.group(1))))
        if target is None:
            return match.group(0)
        relative = posixpath.relpath(target, posixpath.dirname(uri) or ".")
        return f"]({relative}{match.group(2) or ''})"

    return LINK.sub(relink, markdown)
