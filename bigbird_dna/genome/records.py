"""What to say when a record (contig, chromosome) named by an annotation, a BED, a VCF or a region
is not in the genome: a few of the genome's names and, when one is close, the one that was meant.

Names from different sources often differ only in their spelling of the same sequence: NCBI FASTA
headers (``gi|15926051|ref|NC_002952.2|``) against the accession a VCF uses (``NC_002952.2``), a
missing or extra version (``NC_002952``), ``chr1`` against ``1``. :func:`closest_record` finds those
first, then a close spelling.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable

_VERSION = re.compile(r"\.\d+$")


def _forms(name: str) -> set[str]:
    """The spellings a record name may take elsewhere: its ``|``-separated parts, without version,
    without a ``chr`` prefix."""
    forms = {name, *(part for part in name.split("|") if part)}
    forms |= {_VERSION.sub("", form) for form in forms}
    forms |= {form[3:] for form in forms if form.lower().startswith("chr")}
    return forms


def closest_record(name: str, records: Iterable[str]) -> str | None:
    """The record of the genome that ``name`` most likely means, or None."""
    records = list(records)
    wanted = _forms(name)
    same = [record for record in records if wanted & _forms(record)]
    if same:
        return min(same, key=len)
    def likeness(record: str) -> float:  # the closest pair of spellings
        return max(difflib.SequenceMatcher(None, a, b).ratio() for a in wanted for b in _forms(record))

    best = max(records, key=likeness, default=None)
    return best if best is not None and likeness(best) >= 0.8 else None


def some_records(records: Iterable[str], limit: int = 5) -> str:
    """A few record names of the genome, for error messages."""
    names = list(records)
    return ", ".join(names[:limit]) + (f" ... ({len(names)} records)" if len(names) > limit else "")


def unknown_record(name: str, records: Iterable[str], genome: str, what: str = "record") -> str:
    """``record 'X' is not in GENOME (its records: ...); did you mean 'Y'?``: the first sentences of
    an error about a record the genome lacks (``what`` names it as its source does: seqid, contig);
    callers add where it came from and the fix."""
    records = list(records)
    meant = closest_record(name, records)
    hint = f"; did you mean {meant!r}?" if meant else "."
    return f"{what} {name!r} is not in {genome} (its records: {some_records(records)}){hint}"
