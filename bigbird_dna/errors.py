"""User-facing errors.

Every problem a user can fix (a missing file, a malformed FASTA, a contig not in the genome, an
unknown override...) is raised as :class:`InputError` with a message that names the problem and the
fix. Command-line entry points catch it with :func:`exit_on_input_error`, print one line and exit
with status 2, instead of a traceback flood.
"""

from __future__ import annotations

import functools
import sys
from typing import Callable, TypeVar

F = TypeVar("F", bound=Callable)

EXIT_INPUT_ERROR = 2


class InputError(Exception):
    """A problem with the user's input or configuration that the user can fix."""


def exit_on_input_error(fn: F) -> F:
    """Wrap a CLI entry point: an :class:`InputError` prints ``error: ...`` and exits 2."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except InputError as err:
            print(f"error: {err}", file=sys.stderr)
            sys.exit(EXIT_INPUT_ERROR)

    return wrapper  # type: ignore[return-value]


def require_extra(module: str, extra: str, purpose: str):
    """Import an optional dependency, or raise an :class:`InputError` naming the extra to install.

    ``require_extra("scipy.io", "deepsea", "reading DeepSEA .mat files")`` returns ``scipy.io``.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(f"{purpose} needs the optional package {module.split('.')[0]}: "
                         f"pip install 'bigbird_dna[{extra}]'.") from None


def plain_help(text: str) -> str:
    """A reST docstring as a terminal help text: ``code`` and :role:`target` markup removed."""
    import re

    text = re.sub(r":[a-z]+:`~?(?:[\w.]+\.)?([^`]+)`", r"\1", text)
    return text.replace("``", "").replace("::\n", ":\n")
