"""k-mer (Markov chain) baselines for DNA language models, in numpy.

A model that beats these has learnt something beyond k-mer statistics. Two kinds:

- **causal** order ``k``: ``p(x_i | x_{i-k} .. x_{i-1})``, the classic Markov chain;
- **bidirectional** order ``k``: ``p(x_i | x_{i-k} .. x_{i-1}, x_{i+1} .. x_{i+k})``, ``k`` bases on
  each side, the k-mer analogue of a masked LM (it sees all neighbours, none of them masked, so it
  is an optimistic baseline for an MLM whose neighbours are sometimes masked too).

Both are fitted by counting on the TRAIN region, on both strands, with additive smoothing
``(count + alpha) / (total + 4 alpha)``. Sequences are coded A=0 C=1 G=2 T=3; any other character
(N, IUPAC codes) breaks contexts and costs ``log2(15)`` bits when it is itself predicted. Where a
position lacks a full context (sequence edges, near an N), the longest order that fits is used.
Everything is vectorised: a 1.7 Mbp genome is counted for orders 0..10 in about a second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

_CODES = np.full(256, 4, dtype=np.int64)
for _i, _b in enumerate("ACGT"):
    _CODES[ord(_b)] = _CODES[ord(_b.lower())] = _i
OTHER_BITS = math.log2(15)


def encode(seq: str) -> np.ndarray:
    """``seq`` as int64 codes ``[L]``: A=0 C=1 G=2 T=3, anything else 4."""
    return _CODES[np.frombuffer(seq.encode("ascii", "replace"), dtype=np.uint8)]


def reverse_complement_codes(codes: np.ndarray) -> np.ndarray:
    return np.where(codes < 4, 3 - codes, 4)[::-1]


def _context(codes: np.ndarray, offsets: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """For every position ``i``: the base-4 number spelled by ``codes[i + o]`` for ``o`` in
    ``offsets``, and whether all those positions exist and are A/C/G/T. Both ``[L]``."""
    n = len(codes)
    index = np.zeros(n, dtype=np.int64)
    valid = np.ones(n, dtype=bool)
    positions = np.arange(n)
    for offset in offsets:
        j = positions + offset
        inside = (j >= 0) & (j < n)
        value = np.where(inside, codes[np.clip(j, 0, n - 1)], 4)
        valid &= value < 4
        index = index * 4 + np.minimum(value, 3)
    return index, valid


def _join(seqs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Many coded sequences as one: ``(codes [L], separator [L] bool)``, one code-4 separator between
    neighbours. A separator breaks every context across it, as a sequence edge does, so counts and
    per-base bits on the join equal those on the parts: many short records (upstream regions,
    contigs) cost one vectorised pass instead of one per record."""
    if len(seqs) <= 1:
        codes = seqs[0] if seqs else np.zeros(0, dtype=np.int64)
        return codes, np.zeros(len(codes), dtype=bool)
    parts, flags = [], []
    for i, codes in enumerate(seqs):
        if i:
            parts.append(np.full(1, 4, dtype=np.int64))
            flags.append(np.ones(1, dtype=bool))
        parts.append(np.asarray(codes, dtype=np.int64))
        flags.append(np.zeros(len(codes), dtype=bool))
    return np.concatenate(parts), np.concatenate(flags)


def _offsets(kind: str, order: int) -> list[int]:
    left = list(range(-order, 0))
    return left if kind == "causal" else left + list(range(1, order + 1))


@dataclass
class KmerModel:
    """Count tables for every order ``0..order`` of one kind; see the module docstring."""

    kind: str
    order: int
    alpha: float
    counts: list[np.ndarray]  # counts[j]: [4 ** (j or 2j), 4] for order j

    @classmethod
    def fit(cls, seqs: list[np.ndarray], kind: str, order: int, alpha: float,
            both_strands: bool = True) -> "KmerModel":
        """Count ``seqs`` (coded, see :func:`encode`), and their reverse complements with ``both_strands``."""
        codes = _join(seqs)[0]
        both = (codes, reverse_complement_codes(codes)) if both_strands else (codes,)
        counts = []
        for j in range(order + 1):
            width = len(_offsets(kind, j))
            table = np.zeros(4 ** width * 4, dtype=np.int64)
            for strand in both:
                ctx, ok = _context(strand, _offsets(kind, j))
                ok &= strand < 4
                table += np.bincount(ctx[ok] * 4 + strand[ok], minlength=table.size)
            counts.append(table.reshape(-1, 4))
        return cls(kind, order, alpha, counts)

    def bits(self, codes: np.ndarray) -> np.ndarray:
        """``-log2 p(x_i | context)`` for every position of one sequence: float64 ``[L]``."""
        out = np.full(len(codes), OTHER_BITS)
        done = codes >= 4
        for j in range(self.order, -1, -1):  # longest context first, then back off
            ctx, ok = _context(codes, _offsets(self.kind, j))
            take = ok & ~done
            table = self.counts[j]
            hits = table[ctx[take], codes[take]]
            totals = table[ctx[take]].sum(1)
            out[take] = -np.log2((hits + self.alpha) / (totals + 4 * self.alpha))
            done |= take
        return out


def select_and_fit(train: list[np.ndarray], kind: str, orders: range, alphas: tuple[float, ...] = (0.01, 0.1, 1.0),
                   holdout_fraction: float = 0.1, both_strands: bool = True) -> tuple[KmerModel, dict]:
    """Choose the order and smoothing on a slice of TRAIN, then refit on all of TRAIN.

    The last ``holdout_fraction`` of every train sequence is the selection slice; models are fitted
    on the rest and scored on it (bits/base, forward strand). ``both_strands=False`` counts the
    given strand only (for sources that, unlike genomes, are not reverse-complement symmetric).
    Returns the refitted model and a record of the choice:
    ``{"order", "alpha", "selection_bits_per_base": {"k/alpha": bits}}``.
    """
    fit_part, held = [], []
    for codes in train:
        cut = int(len(codes) * (1 - holdout_fraction))
        fit_part.append(codes[:cut])
        held.append(codes[cut:])
    full = KmerModel.fit(fit_part, kind, max(orders), alphas[0], both_strands)
    held_codes, separator = _join(held)
    scores = {}
    for order in orders:
        for alpha in alphas:
            model = KmerModel(kind, order, alpha, full.counts[: order + 1])
            total = model.bits(held_codes)[~separator].sum()
            scores[f"{order}/{alpha}"] = total / max(1, int((~separator).sum()))
    best = min(scores, key=scores.get)
    order, alpha = int(best.split("/")[0]), float(best.split("/")[1])
    refit = KmerModel.fit(train, kind, order, alpha, both_strands)
    return refit, {"order": order, "alpha": alpha, "selection_bits_per_base": scores}
