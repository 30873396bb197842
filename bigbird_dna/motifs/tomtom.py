"""Match patterns to JASPAR motifs with TOMTOM (``memelite``'s implementation, complete scores,
both strands of every target).

A query is a probability matrix ``[W, 4]`` (A, C, G, T), e.g. a pattern's trimmed base frequencies
(:meth:`~bigbird_dna.motifs.modisco.Pattern.core` of its ``ppm``). For each query, TOMTOM gives a
p-value against every target; from those this module derives:

- the **E-value**: the p-value times the number of targets;
- the **q-value**: Benjamini-Hochberg over that query's p-values against all targets (the
  smallest false discovery rate at which the match would be called).

TOMTOM's p-values take the targets' columns as their background, so they depend on the target set:
match against a whole collection (hundreds of motifs), not a handful. Needs the ``motifs`` extra
(``memelite``, which compiles numba kernels on its first run, about a minute).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bigbird_dna.errors import InputError, require_extra
from bigbird_dna.motifs.jaspar import MOTIFS_EXTRA, Motif


@dataclass(frozen=True)
class Match:
    """A target motif's match to a query: its ID and name, the statistics, and the alignment
    (``offset`` of the target against the query, ``overlap`` in positions, ``strand`` of the target)."""

    motif_id: str
    name: str
    p_value: float
    q_value: float
    e_value: float
    offset: int
    overlap: int
    strand: str


def q_values(p_values: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg q-values of a 1-D array of p-values (same order)."""
    order = np.argsort(p_values, kind="stable")
    ranked = p_values[order] * len(p_values) / np.arange(1, len(p_values) + 1)
    monotone = np.minimum.accumulate(ranked[::-1])[::-1]
    out = np.empty_like(monotone)
    out[order] = np.minimum(monotone, 1.0)
    return out


def match_motifs(queries: list[np.ndarray], targets: list[Motif], top: int = 3) -> list[list[Match]]:
    """The ``top`` best targets of each query ``[W, 4]``, by p-value (ties keep the targets' order).

    Raises:
        InputError: no targets, or a query that is not a ``[W, 4]`` matrix with a nonzero entry.
    """
    if not targets:
        raise InputError("TOMTOM needs target motifs; the JASPAR selection is empty.")
    for i, query in enumerate(queries):
        if query.ndim != 2 or query.shape[1] != 4 or not np.abs(query).sum():
            raise InputError(f"TOMTOM query {i} has shape {list(query.shape)} or is all zeros; expected [W, 4].")
    if not queries:
        return []
    tomtom = require_extra("memelite", MOTIFS_EXTRA, "TOMTOM").tomtom
    p, _, offsets, overlaps, strands = tomtom([np.asarray(q, dtype=np.float64).T for q in queries],
                                              [m.pfm.T for m in targets])  # [Q, T] each
    matches = []
    for row in range(len(queries)):
        q = q_values(p[row])
        best = np.argsort(p[row], kind="stable")[:top]
        matches.append([Match(motif_id=targets[j].id, name=targets[j].name, p_value=float(p[row, j]),
                              q_value=float(q[j]), e_value=float(p[row, j] * len(targets)),
                              offset=int(offsets[row, j]), overlap=int(overlaps[row, j]),
                              strand="+" if strands[row, j] == 0 else "-") for j in best])
    return matches
