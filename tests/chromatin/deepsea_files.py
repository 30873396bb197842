"""Small files in exactly the DeepSEA bundle's layouts, with a planted signal a tiny model learns.

- :func:`write_v73`: MATLAB v7.3 (HDF5 behind MATLAB's 512-byte userblock header), arrays as h5py
  shows ``train.mat``: ``trainxdata (1000, 4, N)`` and ``traindata (919, N)`` uint8, chunked over
  samples and carrying MATLAB's ``MATLAB_class`` attribute.
- :func:`write_v5`: MATLAB v5 via ``scipy.io.savemat``: ``validxdata (N, 4, 1000)`` and
  ``validdata (N, 919)``.

Planted signal (:func:`planted_samples`): three 24-bp motifs, each present (four times) in 15% of
the windows, about DeepSEA's positive rate for which the paper's ``pos_weight=8`` balances the
loss. Label ``j`` follows motif ``j % 3`` with 0.5% of labels flipped, so every group (DHS, TF, HM)
holds labels of all three motifs and each motif drives a third of the 919 labels. (With one motif
per group, the 690 TF labels dominate the gradient and a tiny model learns the DHS and HM motifs
many steps later.) A few labels have no positives at all, and some windows hold a run of N.
"""

from __future__ import annotations

import time
from pathlib import Path

import h5py
import numpy as np
import scipy.io

from bigbird_dna.genome.sequence import reverse_complement

# Reverse-complement palindromes: the same on both strands, so the reverse-complement copies of the
# bundle hold the same motif tokens.
MOTIFS = ("GGGCGGGGCCGCGCGGCCCCGCCC", "TTATCAATTGATATCAATTGATAA", "AACCCTAACCCTAGGGTTAGGGTT")
NO_POSITIVE_LABELS = (3, 500, 900)


def matlab_73_header() -> bytes:
    """The 128 bytes MATLAB writes at the start of a v7.3 file (text, subsystem offset, version, endian)."""
    text = (f"MATLAB 7.3 MAT-file, Platform: GLNXA64, Created on: "
            f"{time.strftime('%a %b %d %H:%M:%S %Y', time.gmtime(0))} HDF5 schema 1.00 .").encode()
    return text.ljust(116, b" ") + b"\x00" * 8 + b"\x00\x02" + b"IM"


def write_v73(path: Path, x: np.ndarray, labels: np.ndarray, prefix: str = "train",
              chunk: int = 64, compression: str | None = "gzip") -> Path:
    """``x [N, 4, L]`` and ``labels [N, C]`` as MATLAB v7.3 ``{prefix}xdata (L, 4, N)`` and
    ``{prefix}data (C, N)`` uint8, the way h5py shows DeepSEA's ``train.mat``."""
    with h5py.File(path, "w", userblock_size=512) as f:
        n = x.shape[0]
        for key, array in ((f"{prefix}xdata", x.transpose(2, 1, 0)), (f"{prefix}data", labels.T)):
            chunks = (*array.shape[:-1], min(chunk, n))
            dataset = f.create_dataset(key, data=array.astype(np.uint8), chunks=chunks, compression=compression)
            dataset.attrs["MATLAB_class"] = np.bytes_("uint8")
    with open(path, "r+b") as handle:
        handle.write(matlab_73_header())
    return path


def write_v73_streamed(path: Path, num_samples: int, make_slab, slab: int = 1024, seq_len: int = 1000,
                       num_labels: int = 919, prefix: str = "train") -> Path:
    """A large v7.3 file written one slab at a time: ``make_slab(start, stop)`` returns
    ``(x [n, 4, L], labels [n, C])``. Chunks are ``slab`` samples wide, uncompressed."""
    with h5py.File(path, "w", userblock_size=512) as f:
        x = f.create_dataset(f"{prefix}xdata", shape=(seq_len, 4, num_samples), dtype=np.uint8,
                             chunks=(seq_len, 4, slab))
        y = f.create_dataset(f"{prefix}data", shape=(num_labels, num_samples), dtype=np.uint8,
                             chunks=(num_labels, slab))
        for start in range(0, num_samples, slab):
            stop = min(start + slab, num_samples)
            xs, ys = make_slab(start, stop)
            x[:, :, start:stop] = xs.transpose(2, 1, 0)
            y[:, start:stop] = ys.T
    with open(path, "r+b") as handle:
        handle.write(matlab_73_header())
    return path


def write_v5(path: Path, x: np.ndarray, labels: np.ndarray, prefix: str = "valid") -> Path:
    """``x [N, 4, L]`` and ``labels [N, C]`` as MATLAB v5 ``{prefix}xdata (N, 4, L)`` and
    ``{prefix}data (N, C)``, the layout of DeepSEA's ``valid.mat``/``test.mat``."""
    scipy.io.savemat(str(path), {f"{prefix}xdata": x.astype(np.uint8), f"{prefix}data": labels.astype(np.uint8)},
                     format="5", do_compression=False)
    return path


def planted_samples(n: int, seed: int, seq_len: int = 1000, num_labels: int = 919, copies: int = 4,
                    flip: float = 0.005, prevalence: float = 0.15) -> tuple[list[str], np.ndarray]:
    """``n`` random windows with the motifs planted, and their labels ``[n, num_labels]`` uint8."""
    rng = np.random.default_rng(seed)
    seqs = ["".join(rng.choice(list("ACGT"), seq_len)) for _ in range(n)]
    present = rng.random((n, len(MOTIFS))) < prevalence  # [n, motifs]
    for i in range(n):
        seq = list(seqs[i])
        slots = rng.permutation(seq_len // 40 - 1)[: copies * len(MOTIFS)] * 40 + 8  # non-overlapping
        for m, motif in enumerate(MOTIFS):
            if present[i, m]:
                for slot in slots[m * copies:(m + 1) * copies]:
                    seq[slot:slot + len(motif)] = motif
        if i % 7 == 0:  # a few N runs: all-zero one-hot columns
            seq[5:11] = "N" * 6
        seqs[i] = "".join(seq)
    labels = present[:, np.arange(num_labels) % len(MOTIFS)].astype(np.uint8)  # [n, C]
    labels ^= (rng.random(labels.shape) < flip).astype(np.uint8)
    labels[:, [j for j in NO_POSITIVE_LABELS if j < num_labels]] = 0
    return seqs, labels


def with_reverse_complements(seqs: list[str], labels: np.ndarray,
                             layout: str = "halves") -> tuple[list[str], np.ndarray]:
    """Add the reverse complement of every window, as the second half (``halves``) or after each
    forward row (``interleaved``)."""
    rc = [reverse_complement(s) for s in seqs]
    if layout == "halves":
        return seqs + rc, np.concatenate([labels, labels])
    both = [s for pair in zip(seqs, rc) for s in pair]
    return both, np.repeat(labels, 2, axis=0)
