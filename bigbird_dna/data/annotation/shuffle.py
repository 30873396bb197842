"""Dinucleotide shuffle (Altschul & Erickson 1985, as an Euler path): a random sequence with exactly
the same first base, last base and count of every dinucleotide (hence of every base) as the input.

The sequence is a walk through a multigraph whose vertices are characters and whose edges are its
``len(seq) - 1`` dinucleotides. A random Eulerian walk with the same start and end is drawn as in
Kandel et al. (1996): pick each vertex's last exit edge at random until those edges form a tree
pointing to the last character, shuffle every vertex's other exits, and walk. Every character is a
vertex, so N and IUPAC codes keep their contexts too.
"""

from __future__ import annotations

import numpy as np


def _last_edges_form_tree(last: dict[str, str], end: str) -> bool:
    """Whether following each vertex's last exit leads to ``end`` from every vertex (no cycle)."""
    reaches_end = {end}
    for vertex in last:
        path, node = [], vertex
        while node not in reaches_end:
            if node in path:
                return False
            path.append(node)
            node = last[node]
        reaches_end.update(path)
    return True


def dinucleotide_shuffle(seq: str, rng: np.random.Generator) -> str:
    """A dinucleotide-preserving shuffle of ``seq`` (any characters; case is kept as given).

    Args:
        seq: the sequence; those of length < 3 (or with one kind of dinucleotide path) come back unchanged.
        rng: numpy generator, e.g. ``np.random.default_rng(seed)``.

    Returns:
        A string of the same length whose dinucleotide counts equal those of ``seq``, starting and
        ending with the same characters.
    """
    if len(seq) < 3:
        return seq
    exits: dict[str, list[str]] = {}
    for a, b in zip(seq, seq[1:]):
        exits.setdefault(a, []).append(b)
    end = seq[-1]
    while True:  # draw last exits until they form an arborescence rooted at `end` (expected few tries)
        last_index = {v: int(rng.integers(len(out))) for v, out in exits.items() if v != end}
        last = {v: exits[v][i] for v, i in last_index.items()}
        if _last_edges_form_tree(last, end):
            break
    order: dict[str, list[str]] = {}
    for vertex, out in exits.items():
        rest = list(out)
        chosen = rest.pop(last_index[vertex]) if vertex in last_index else None
        rest = [rest[i] for i in rng.permutation(len(rest))]
        order[vertex] = rest + ([chosen] if chosen is not None else [])
    position = {vertex: 0 for vertex in order}
    walk = [seq[0]]
    node = seq[0]
    for _ in range(len(seq) - 1):
        nxt = order[node][position[node]]
        position[node] += 1
        walk.append(nxt)
        node = nxt
    return "".join(walk)
