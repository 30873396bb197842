"""k-mer frequencies, strand-symmetric (canonical) or on the given strand, vectorised with numpy.

For each ``k`` in ``1..K`` a sequence's k-mers are counted, then divided by the sequence's number of
valid k-mers. Canonical features (the default, for data whose strand is arbitrary) count both strands
at once by folding every k-mer onto its canonical form (the smaller of it and its reverse
complement); oriented features (``oriented=True``, for data read on a defined strand, such as
promoters) keep all ``4^k`` k-mers apart, ordered A=0, C=1, G=2, T=3 with the first base most
significant, the order of the classifier head's composition path. A k-mer that overlaps an N (code
4, also the padding) is not counted. Features for ``K`` are the columns of ``k = 1..K`` side by
side, so the features of a smaller ``K`` are a prefix of the columns: see :func:`feature_slices`.
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


@lru_cache(maxsize=None)
def column_ids(k: int, oriented: bool = False) -> np.ndarray:
    """``int32 [4^k]``: each k-mer id's column, its canonical form's or (oriented) its own."""
    return np.arange(4 ** k, dtype=np.int32) if oriented else canonical_ids(k)


def num_features(max_k: int, oriented: bool = False) -> int:
    """Columns of the features for ``k = 1..max_k``: canonical 2, 12, 44, 180, 692, 2772;
    oriented 4, 20, 84, 340, 1364, 5460."""
    return sum(int(column_ids(k, oriented).max()) + 1 for k in range(1, max_k + 1))


def feature_slices(max_k: int = MAX_K, oriented: bool = False) -> dict[int, slice]:
    """``{K: slice}``: the columns of the features for ``k = 1..K``."""
    return {k: slice(0, num_features(k, oriented)) for k in range(1, max_k + 1)}


def kmer_frequencies(codes: np.ndarray, max_k: int = MAX_K, rows_per_chunk: int | None = None,
                     oriented: bool = False) -> np.ndarray:
    """k-mer frequencies for ``k = 1..max_k``, canonical or (``oriented``) on the given strand.

    Args:
        codes: ``uint8 [N, L]`` base codes (4 = N or padding).
        max_k: largest k.
        rows_per_chunk: rows counted at once (default: about 4M bases, and 16M counts of the
            largest k, per chunk).
        oriented: keep a k-mer and its reverse complement apart.

    Returns:
        ``float32 [N, num_features(max_k, oriented)]``; each k's block sums to 1 (0 when no valid k-mer).
    """
    n, width = codes.shape
    out = np.zeros((n, num_features(max_k, oriented)), dtype=np.float32)
    largest = int(column_ids(max_k, oriented).max()) + 1
    step = rows_per_chunk or max(1, min(4_000_000 // max(width, 1), 16_000_000 // largest))
    for lo in range(0, n, step):
        out[lo:lo + step] = _chunk(codes[lo:lo + step], max_k, oriented)
    return out


def _chunk(codes: np.ndarray, max_k: int, oriented: bool) -> np.ndarray:
    n, width = codes.shape
    blocks = []
    index = np.zeros((n, width), dtype=np.int32)
    valid = np.ones((n, width), dtype=bool)
    for k in range(1, max_k + 1):
        w = width - k + 1
        if w <= 0:  # sequences shorter than k: no k-mers
            blocks.append(np.zeros((n, int(column_ids(k, oriented).max()) + 1), dtype=np.float32))
            continue
        column = codes[:, k - 1:k - 1 + w]
        index = index[:, :w] * 4 + np.minimum(column, 3)  # rolling base-4 id of the k-mer ending here
        valid = valid[:, :w] & (column != N_CODE)
        columns = column_ids(k, oriented)
        f_k = int(columns.max()) + 1
        rows = np.broadcast_to(np.arange(n, dtype=np.int32)[:, None] * f_k, (n, w))
        counts = np.bincount((rows + columns[index])[valid], minlength=n * f_k).reshape(n, f_k)
        counts = counts.astype(np.float32)  # [n, F_k]
        total = counts.sum(1, keepdims=True)
        blocks.append(counts / np.maximum(total, 1.0))
    return np.concatenate(blocks, axis=1)
