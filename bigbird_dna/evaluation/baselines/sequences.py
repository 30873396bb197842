"""DNA as base codes for the baselines: ``uint8 [N, L]`` with A, C, G, T = 0..3 and 4 for N, any
other letter and the padding after a shorter sequence, plus ``lengths [N]``.

One representation serves both baselines: :mod:`.kmers` counts k-mers on the codes (a 4 breaks a
k-mer) and :mod:`.cnn` one-hot encodes them (a 4 is an all-zero column). Strings and DeepSEA's
one-hot arrays (``[n, 4, L]`` in A, G, C, T order) both convert to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from bigbird_dna.evaluation.kmer_chains import encode

N_CODE = 4  # the code of N, any other letter and padding, as in markov_baseline.encode
_AGCT_TO_ACGT = np.array([0, 2, 1, 3], dtype=np.uint8)  # DeepSEA channel -> code


@dataclass
class CodedSet:
    """Sequences as codes with their labels.

    Attributes:
        codes: ``uint8 [N, L]``, ``L`` the longest sequence; rows right-padded with 4.
        lengths: ``int64 [N]`` bases of each sequence.
        labels: ``float32 [N, C]`` 0/1 (one-hot rows for a multi-class set).
    """

    codes: np.ndarray
    lengths: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.codes)

    def subset(self, rows: np.ndarray) -> "CodedSet":
        """The rows ``rows`` (cropped to their own longest sequence)."""
        lengths = self.lengths[rows]
        width = int(lengths.max(initial=1))
        return CodedSet(self.codes[rows, :width], lengths, self.labels[rows])


def encode_strings(seqs: Sequence[str], max_len: int | None = None,
                   keep: str = "centre") -> tuple[np.ndarray, np.ndarray]:
    """Strings -> ``(codes uint8 [N, L], lengths int64 [N])``; sequences longer than ``max_len`` are
    cropped to ``max_len`` bases around their centre (``keep="centre"``, the baselines' view) or to
    their first ``max_len`` (``keep="start"``, what the model reads of them: its tokens are cut at
    the end)."""
    if keep not in ("centre", "start"):
        raise ValueError(f"keep={keep!r}: 'centre' or 'start'")
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    if max_len is not None and len(seqs) and lengths.max() > max_len:
        cut = [(len(s) - max_len) // 2 if len(s) > max_len and keep == "centre" else 0 for s in seqs]
        seqs = [s[c:c + max_len] for s, c in zip(seqs, cut)]
        lengths = np.minimum(lengths, max_len)
    width = int(lengths.max(initial=1))
    codes = np.full((len(seqs), width), N_CODE, dtype=np.uint8)
    flat = encode("".join(seqs))  # the k-mer chains' coding: A, C, G, T = 0..3, anything else 4
    rows = np.repeat(np.arange(len(seqs)), lengths)
    cols = np.arange(len(flat)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    codes[rows, cols] = flat
    return codes, lengths


def encode_onehot_agct(x: np.ndarray) -> np.ndarray:
    """DeepSEA one-hot ``[n, 4, L]`` (A, G, C, T channels, all-zero = N) -> codes ``uint8 [n, L]``."""
    codes = np.full((x.shape[0], x.shape[2]), N_CODE, dtype=np.uint8)
    for channel in range(4):
        codes[x[:, channel] != 0] = _AGCT_TO_ACGT[channel]
    return codes


def reverse_complement_codes(codes: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Reverse complements of coded rows ``[N, L]``, each still starting at column 0 (pads stay 4)."""
    comp = np.array([3, 2, 1, 0, N_CODE], dtype=np.uint8)[codes]
    width = codes.shape[1]
    cols = (lengths[:, None] - 1 - np.arange(width)[None, :])  # [N, L] source column of each position
    out = np.take_along_axis(comp, np.clip(cols, 0, width - 1), axis=1)
    out[cols < 0] = N_CODE
    return out


def pick_rows(total: int, limit: int | None, seed: int) -> np.ndarray:
    """Sorted indices of a seeded random ``limit`` of ``total`` rows (all of them when fewer)."""
    if limit is None or total <= limit:
        return np.arange(total)
    return np.sort(np.random.default_rng(seed).choice(total, size=limit, replace=False))


def coded_split(dataset: Any, limit: int | None, seed: int, max_len: int | None = None,
                keep: str = "centre") -> CodedSet:
    """A split's sequences and labels as a :class:`CodedSet`, at most ``limit`` rows (seeded).

    Args:
        dataset: a map-style dataset of ``(seq, labels [C], ...)`` items, or a DeepSEA stream (an
            object with a ``file`` that has ``read(start, stop) -> (x [n, 4, L], y [n, C])``), whose
            rows are read as one-hot in contiguous slabs spread over the file.
        limit: at most this many rows (``None``: all).
        seed: picks the rows.
        max_len: crop longer sequences to this many bases (``None``: keep all), chosen by ``keep``:
            their centre (``"centre"``) or their first (``"start"``), as :func:`encode_strings`.
    """
    file = getattr(dataset, "file", None)
    if file is not None and hasattr(file, "read"):
        return _coded_deepsea(file, limit, seed)
    rows = pick_rows(len(dataset), limit, seed)
    items = [dataset[int(i)] for i in rows]
    codes, lengths = encode_strings([item[0] for item in items], max_len, keep)
    labels = np.stack([np.asarray(item[1], dtype=np.float32).reshape(-1) for item in items])
    return CodedSet(codes, lengths, labels)


def _coded_deepsea(file: Any, limit: int | None, seed: int, slab: int = 256) -> CodedSet:
    """DeepSEA rows as codes: every row, or ``limit`` rows in seeded slabs of ``slab`` contiguous
    rows (a random row of an HDF5 file costs one strided read each)."""
    total = len(file)
    if limit is None or total <= limit:
        starts = np.arange(0, total, slab)
    else:
        starts = np.sort(np.random.default_rng(seed).choice(np.arange(0, total, slab), size=-(-limit // slab),
                                                             replace=False))
    codes, labels = [], []
    for start in starts:
        x, y = file.read(int(start), int(min(start + slab, total)))
        codes.append(encode_onehot_agct(x))
        labels.append(np.asarray(y, dtype=np.float32))
    codes_all = np.concatenate(codes)[:limit]
    return CodedSet(codes_all, np.full(len(codes_all), codes_all.shape[1], dtype=np.int64),
                    np.concatenate(labels)[:limit])
