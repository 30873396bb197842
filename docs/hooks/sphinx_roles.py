"""Griffe extension: render the Sphinx roles of our docstrings as links in the API reference.

The package's docstrings cross-reference with Sphinx roles (``:func:`layout_for```,
``:class:`~bigbird_dna.genome.fasta.Genome```), which Markdown would print verbatim. Each role
becomes an *optional* mkdocs-autorefs reference: a link when the API reference renders the target,
plain code otherwise (no warning, since most helpers are not on any page). Bare names are looked up
where the docstring sits (its class, then its module: imports included); ``.name`` is relative to
the module's package; ``~`` shows only the last component, as in Sphinx.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def _lookup(obj: griffe.Object, name: str) -> str:
    """The full path ``name`` refers to in the docstring of ``obj`` (``name`` itself if unknown)."""
    if name.startswith("."):
        package = obj.module.path if obj.is_module and obj.module.is_init_module else obj.module.parent.path
        return package + name
    head, _, rest = name.partition(".")
    scope = obj
    while scope is not None:
        member = scope.members.get(head) if hasattr(scope, "members") else None
        if member is not None:
            base = member.target_path if member.is_alias else member.path
            return f"{base}.{rest}" if rest else base
        scope = scope.parent
    return name


class SphinxRoles(griffe.Extension):
    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.is_alias or obj.docstring is None:
            return

        def autoref(match: re.Match) -> str:
            short, name = match.groups()
            shown = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
            identifier = html.escape(_lookup(obj, name), quote=True)
            return f'<autoref identifier="{identifier}" optional><code>{html.escape(shown)}</code></autoref>'

        obj.docstring.value = ROLE.sub(autoref, obj.docstring.value)
