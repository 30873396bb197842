"""Position weight matrices on DNA strings: one-hot encoding, sampling an instance from a PFM, and
log-odds scores of every site on both strands.

Conventions: a PFM is ``[L, 4]`` probabilities (columns A, C, G, T), read 5'->3' on its own strand;
a one-hot sequence is ``[4, L]`` (rows A, C, G, T; a non-ACGT base is an all-zero column), the
layout of TF-MoDISco and of the attribution files. Positions are 0-based; a site at ``i`` covers
``[i, i + L)`` of the forward strand whichever strand it is read on.
"""

from __future__ import annotations

import numpy as np

BASES = "ACGT"
_CODES = np.full(256, 4, dtype=np.int64)  # byte -> 0..3 for ACGT (any case), 4 for anything else
for _i, _base in enumerate(BASES):
    _CODES[ord(_base)] = _CODES[ord(_base.lower())] = _i


def base_codes(seq: str) -> np.ndarray:
    """``[L]`` int64 codes of a DNA string: A, C, G, T = 0..3, anything else = 4."""
    return _CODES[np.frombuffer(seq.encode("ascii"), dtype=np.uint8)]


def one_hot(seq: str) -> np.ndarray:
    """``[4, L]`` float32 one-hot of a DNA string (rows A, C, G, T); N and other codes are zero."""
    return np.eye(5, 4, dtype=np.float32)[base_codes(seq)].T


def reverse_complement_pfm(pfm: np.ndarray) -> np.ndarray:
    """The ``[L, 4]`` matrix of the other strand: positions reversed, A<->T and C<->G."""
    return pfm[::-1, ::-1]


def sample_instance(pfm: np.ndarray, rng: np.random.Generator) -> str:
    """One site drawn from a PFM ``[L, 4]``: each base from its position's probabilities, 5'->3'
    on the motif's strand."""
    cumulative = np.cumsum(pfm, axis=1)
    draws = rng.random(len(pfm)) * cumulative[:, -1]  # rows that do not quite sum to 1 stay exact
    return "".join(BASES[i] for i in np.minimum((cumulative <= draws[:, None]).sum(axis=1), 3))


def log_odds(pfm: np.ndarray, background: np.ndarray | None = None, pseudocount: float = 0.01) -> np.ndarray:
    """``[L, 4]`` log2 odds of a PFM against a background (default uniform), with ``pseudocount``
    added to each probability before renormalising (a zero would give minus infinity)."""
    background = np.full(4, 0.25) if background is None else np.asarray(background, dtype=np.float64)
    smoothed = (pfm + pseudocount) / (1 + 4 * pseudocount)
    return np.log2(smoothed / background)


def site_scores(seq: str, pfm: np.ndarray) -> np.ndarray:
    """``[len(seq) - L + 1, 2]`` log-odds scores of the motif at every start (0-based): column 0
    read on the forward strand, column 1 on the reverse strand. A non-ACGT base scores its
    position's lowest log-odds."""
    weights = log_odds(pfm)
    length = len(weights)
    if len(seq) < length:
        return np.zeros((0, 2))
    codes = base_codes(seq)
    windows = np.lib.stride_tricks.sliding_window_view(codes, length)  # [P, L]
    scores = []
    for matrix in (weights, reverse_complement_pfm(weights)):
        padded = np.concatenate([matrix, matrix.min(axis=1, keepdims=True)], axis=1)  # [L, 5]
        scores.append(padded[np.arange(length), windows].sum(axis=1))
    return np.stack(scores, axis=1)


def max_log_odds(seq: str, pfm: np.ndarray) -> float:
    """The best log-odds score of the motif anywhere in ``seq``, on either strand: a presence-only
    score (what a convolution with global max pooling can see)."""
    scores = site_scores(seq, pfm)
    return float(scores.max()) if scores.size else float("-inf")
