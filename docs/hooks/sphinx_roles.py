"""Griffe extension: render the Sphinx roles of our docstrings as links, and check their targets.

The package's docstrings cross-reference with Sphinx roles (``:func:`layout_for```,
``:class:`~bigbird_dna.genome.fasta.FastaGenome```), which Markdown would print verbatim. Each role
becomes an *optional* mkdocs-autorefs reference: a link when the API reference renders the target,
plain code otherwise (most helpers are on no page). Bare names are looked up where the docstring
sits (its class, then its module, imports included); ``.name`` is relative to the module's package;
``~`` shows only the last component, as in Sphinx.

A role whose target is a dotted path into the package (written in full, relative, or starting from
a name in scope) must name an object that exists: otherwise a warning names the docstring, and
``mkdocs build --strict`` fails. A bare name that is not in scope cannot be checked and is left as code.
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def _resolve(obj: griffe.Object, name: str) -> tuple[str, bool]:
    """(full path, checkable) of ``name`` in the docstring of ``obj``; unknown bare names are not checkable."""
    if name.startswith("."):
        module = obj.module
        package = module.path if module.is_init_module else module.parent.path
        return package + name, True
    head, _, rest = name.partition(".")
    scope = obj
    while scope is not None:
        member = scope.members.get(head)
        if member is not None:
            base = member.target_path if member.is_alias else member.path
            return (f"{base}.{rest}" if rest else base), True
        scope = scope.parent
    return name, "." in name


def _exists(path: str, loader: griffe.GriffeLoader) -> bool:
    """Whether ``path`` names an object: statically, or past a name a module exports only at run
    time (listed in its ``__all__``, served by a module ``__getattr__``, e.g. ``bigbird_dna.BigBirdDNA``)."""
    parts = path.split(".")
    for end in range(len(parts), 0, -1):
        try:
            found = loader.modules_collection[".".join(parts[:end])]
        except KeyError:
            continue
        return end == len(parts) or (found.is_module and parts[end] in (found.exports or ()))
    return False


def _objects(obj: griffe.Object):
    yield obj
    for member in obj.members.values():
        if not member.is_alias:
            yield from _objects(member)


def _code_lines(lines: list[str]) -> list[bool]:
    """Which lines Markdown shows as code: fenced, or indented 4+ spaces after a blank or code line."""
    flags, fenced, previous_blank, previous_code = [], False, True, False
    for line in lines:
        if line.lstrip().startswith("```"):
            fenced = not fenced
            code = True
        else:
            code = fenced or (line.startswith("    ") and (previous_blank or previous_code))
        flags.append(code)
        previous_blank, previous_code = not line.strip(), code and bool(line.strip())
    return flags


class SphinxRoles(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **kwargs) -> None:
        for obj in _objects(pkg):
            if obj.docstring is not None:
                lines = obj.docstring.value.split("\n")
                obj.docstring.value = "\n".join(
                    ROLE.sub(lambda match: self._reference(obj, match, loader, code), line)
                    for line, code in zip(lines, _code_lines(lines)))

    @staticmethod
    def _reference(obj: griffe.Object, match: re.Match, loader: griffe.GriffeLoader, in_code: bool) -> str:
        """The role as an optional autoref (as plain text inside a code block, where HTML would show)."""
        short, name = match.groups()
        path, checkable = _resolve(obj, name)
        if checkable and path.split(".")[0] == obj.package.name and not _exists(path, loader):
            griffe.logger.warning(f"{obj.relative_filepath}:{obj.docstring.lineno}: {match.group(0)} in the "
                                  f"docstring of {obj.path} names {path}, which does not exist")
        shown = name.rsplit(".", 1)[-1] if short else name.lstrip(".")
        if in_code:
            return shown
        return (f'<autoref identifier="{html.escape(path, quote=True)}" optional>'
                f"<code>{html.escape(shown)}</code></autoref>")
