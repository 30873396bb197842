"""Strand-symmetric k-mer frequencies, vectorised with numpy.

For each ``k`` in ``1..K`` a sequence's k-mers are counted on both strands at once by folding every
k-mer onto its canonical form (the smaller of it and its reverse complement), then divided by the
sequence's number of valid k-mers. A k-mer that overlaps an N (code 4, also the padding) is not
counted. Features for ``K`` are the columns of ``k = 1..K`` side by side, so the features of a
smaller ``K`` are a prefix of the columns: see :func:`feature_slices`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from bigbird_dna.evaluation.baselines.sequences import N_CODE

MAX_K = 6


@lru_cache(maxsize=None)
def canonical_ids(k: int) -> np.ndarray:
    """``int32 [4^k]``: the column (``0..F_k-1``) of each k-mer id's canonical form."""
    ids = np.arange(4 ** k)
    digits = (ids[:, None] // 4 ** np.arange(k)[None, :]) % 4  # [4^k, k], least significant first
    rc = ((3 - digits) * 4 ** np.arange(k)[::-1][None, :]).sum(1)  # complement, reversed
    _, column = np.unique(np.minimum(ids, rc), return_inverse=True)
    return column.astype(np.int32)


def num_features(max_k: int) -> int:
    """Columns of the features for ``k = 1..max_k`` (2, 12, 44, 180, 692, 2772)."""
    return sum(int(canonical_ids(k).max()) + 1 for k in range(1, max_k + 1))


def feature_slices(max_k: int = MAX_K) -> dict[int, slice]:
    """``{K: slice}``: the columns of the features for ``k = 1..K``."""
    return {k: slice(0, num_features(k)) for k in range(1, max_k + 1)}


def kmer_frequencies(codes: np.ndarray, max_k: int = MAX_K, rows_per_chunk: int | None = None) -> np.ndarray:
    """Canonical k-mer frequencies for ``k = 1..max_k``.

    Args:
        codes: ``uint8 [N, L]`` base codes (4 = N or padding).
        max_k: largest k.
        rows_per_chunk: rows counted at once (default: about 4M bases per chunk).

    Returns:
        ``float32 [N, num_features(max_k)]``; each k's block sums to 1 (0 when no valid k-mer).
    """
    n, width = codes.shape
    out = np.zeros((n, num_features(max_k)), dtype=np.float32)
    step = rows_per_chunk or max(1, 4_000_000 // max(width, 1))
    for lo in range(0, n, step):
        out[lo:lo + step] = _chunk(codes[lo:lo + step], max_k)
    return out


def _chunk(codes: np.ndarray, max_k: int) -> np.ndarray:
    n, width = codes.shape
    blocks = []
    index = np.zeros((n, width), dtype=np.int32)
    valid = np.ones((n, width), dtype=bool)
    for k in range(1, max_k + 1):
        w = width - k + 1
        if w <= 0:  # sequences shorter than k: no k-mers
            blocks.append(np.zeros((n, int(canonical_ids(k).max()) + 1), dtype=np.float32))
            continue
        column = codes[:, k - 1:k - 1 + w]
        index = index[:, :w] * 4 + np.minimum(column, 3)  # rolling base-4 id of the k-mer ending here
        valid = valid[:, :w] & (column != N_CODE)
        columns = canonical_ids(k)
        f_k = int(columns.max()) + 1
        rows = np.broadcast_to(np.arange(n, dtype=np.int32)[:, None] * f_k, (n, w))
        canon = np.bincount((rows + columns[index])[valid], minlength=n * f_k).reshape(n, f_k)
        canon = canon.astype(np.float32)  # [n, F_k]
        total = canon.sum(1, keepdims=True)
        blocks.append(canon / np.maximum(total, 1.0))
    return np.concatenate(blocks, axis=1)
