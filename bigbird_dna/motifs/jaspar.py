"""JASPAR motifs, offline: the SQLite releases that ship inside the ``pyjaspar`` wheel.

A :class:`Motif` holds a position frequency matrix as probabilities, ``pfm`` of shape ``[L, 4]``
(columns A, C, G, T; each row sums to 1), read 5'->3' on the motif's own strand.

- :func:`fetch_motif`: one motif by matrix ID, ``MA0004.1``, or by base ID, ``MA0004`` (its
  latest version);
- :func:`fetch_collection`: every motif (latest versions) of a collection (``CORE``,
  ``UNVALIDATED``), optionally of one taxonomic group (``vertebrates``, ``plants``, ``insects``...).

An unknown ID, collection, taxon or release is an :class:`~bigbird_dna.errors.InputError` that says
how to list the valid ones (``python -m bigbird_dna.motifs jaspar --jaspar-taxon plants``).
Needs the ``motifs`` extra (``pyjaspar``).
"""

from __future__ import annotations

import functools
import re
import warnings
from dataclasses import dataclass

import numpy as np

from bigbird_dna.errors import InputError, require_extra

BASES = "ACGT"
MOTIFS_EXTRA = "motifs"  # pip install 'bigbird_dna[motifs]'
LIST_HINT = "list valid ones with: python -m bigbird_dna.motifs jaspar [--jaspar-collection C] [--jaspar-taxon T]"
_MATRIX_ID = re.compile(r"^[A-Z]{2}\d{4}(\.\d+)?$")


@dataclass(frozen=True, eq=False)
class Motif:
    """A JASPAR matrix: ``pfm`` ``[L, 4]`` probabilities (A, C, G, T), 5'->3' on the motif's strand."""

    id: str  # versioned matrix ID, e.g. MA0004.1
    name: str  # the factor's name, e.g. Arnt
    pfm: np.ndarray  # [L, 4] float64, rows sum to 1
    collection: str = ""
    taxon: str = ""

    @property
    def length(self) -> int:
        return int(self.pfm.shape[0])

    @property
    def consensus(self) -> str:
        """The most probable base of each position (ties go to the first of A, C, G, T)."""
        return "".join(BASES[i] for i in self.pfm.argmax(axis=1))


def _pyjaspar():
    return require_extra("pyjaspar", MOTIFS_EXTRA, "reading JASPAR motifs")


def latest_release() -> str:
    """The newest JASPAR release that the installed ``pyjaspar`` carries (e.g. ``JASPAR2026``)."""
    return _pyjaspar().JASPAR_LATEST_RELEASE


@functools.lru_cache(maxsize=4)
def _database(release: str):
    pyjaspar = _pyjaspar()
    if release not in pyjaspar.jaspar_releases:
        raise InputError(f"JASPAR release {release!r} is not in the installed pyjaspar; choose among "
                         f"{', '.join(sorted(pyjaspar.jaspar_releases))}.")
    return pyjaspar.jaspardb(release=release)


def _as_motif(record) -> Motif:
    """A pyjaspar (Biopython) motif as a :class:`Motif`."""
    counts = np.array([record.counts[base] for base in BASES], dtype=np.float64).T  # [L, 4]
    totals = counts.sum(axis=1, keepdims=True)
    return Motif(id=record.matrix_id, name=record.name, pfm=counts / np.where(totals > 0, totals, 1.0),
                 collection=record.collection or "", taxon=getattr(record, "tax_group", None) or "")


def fetch_motif(motif_id: str, release: str | None = None) -> Motif:
    """The motif ``motif_id`` (``MA0004.1``; ``MA0004`` is its latest version) of a JASPAR release
    (default :func:`latest_release`).

    Raises:
        InputError: no such matrix in that release.
    """
    release = release or latest_release()
    wanted = motif_id.strip().upper()
    record = None
    if _MATRIX_ID.match(wanted):
        with warnings.catch_warnings():  # pyjaspar warns, then returns None, for an unknown ID
            warnings.simplefilter("ignore")
            record = _database(release).fetch_motif_by_id(wanted)
    if record is None:
        raise InputError(f"JASPAR motif {motif_id!r} is not in {release} (IDs look like MA0004.1, or MA0004 for "
                         f"the latest version); {LIST_HINT}.")
    return _as_motif(record)


def fetch_motifs(motif_ids: list[str] | tuple[str, ...], release: str | None = None) -> list[Motif]:
    """:func:`fetch_motif` of each ID, in order."""
    return [fetch_motif(motif_id, release) for motif_id in motif_ids]


def _distinct(release: str, query: str) -> list[str]:
    return sorted(row[0] for row in _database(release).conn.execute(query).fetchall() if row[0])


@functools.lru_cache(maxsize=8)
def _collection(collection: str, taxon: str | None, release: str) -> tuple[Motif, ...]:
    collections = _distinct(release, "select distinct COLLECTION from MATRIX")
    if collection not in collections:
        raise InputError(f"JASPAR collection {collection!r} is not in {release}; choose among "
                         f"{', '.join(collections)}.")
    if taxon is not None:
        taxa = _distinct(release, "select distinct VAL from MATRIX_ANNOTATION where TAG = 'tax_group'")
        if taxon not in taxa:
            raise InputError(f"JASPAR taxon {taxon!r} is not in {release}; choose among {', '.join(taxa)}.")
    records = _database(release).fetch_motifs(collection=collection, tax_group=[taxon] if taxon else None)
    return tuple(_as_motif(record) for record in records)


def fetch_collection(collection: str = "CORE", taxon: str | None = None, release: str | None = None) -> list[Motif]:
    """The latest version of every motif of a JASPAR ``collection``, of one ``taxon`` (a JASPAR
    taxonomic group such as ``vertebrates`` or ``plants``; None = all), in the database's order.
    Takes about 2 s for a thousand motifs; the result is cached per process.

    Raises:
        InputError: an unknown collection, taxon or release (the message lists the valid ones), or
            a filter that selects nothing.
    """
    release = release or latest_release()
    motifs = list(_collection(collection.upper(), taxon.lower() if taxon else None, release))
    if not motifs:
        raise InputError(f"no JASPAR {release} motif is in collection {collection} and taxon {taxon}; {LIST_HINT}.")
    return motifs
