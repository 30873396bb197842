"""Synthetic labelled sets for the baseline tests: random DNA with a motif planted at random
positions in the positives, so a k-mer model and a CNN can both learn the label."""

from __future__ import annotations

import numpy as np

from bigbird_dna.data.labelled import LabelledSequences

MOTIF = "TGACGTCA"


def random_dna(rng: np.random.Generator, length: int) -> str:
    return "".join(np.array(list("ACGT"))[rng.integers(0, 4, length)])


def planted_set(n: int, length: int = 200, seed: int = 0, motifs: tuple[str, ...] = (MOTIF,),
                copies: int = 1) -> LabelledSequences:
    """``n`` sequences; label ``c`` (one-hot over ``len(motifs) + 1`` classes when there are several
    motifs, else a 0/1 label) has ``motifs[c - 1]`` planted ``copies`` times at random positions."""
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, len(motifs) + 1, n)
    seqs = []
    for c in classes:
        seq = list(random_dna(rng, length))
        if c:
            motif = motifs[c - 1]
            for _ in range(copies):
                at = int(rng.integers(0, length - len(motif)))
                seq[at:at + len(motif)] = motif if rng.random() < 0.5 else _revcomp(motif)
        seqs.append("".join(seq))
    labels = classes.astype(np.float32) if len(motifs) == 1 else np.eye(len(motifs) + 1, dtype=np.float32)[classes]
    return LabelledSequences(seqs, labels)


def _revcomp(seq: str) -> str:
    return seq.translate(str.maketrans("ACGT", "TGCA"))[::-1]


def splits(n: int, length: int = 200, seed: int = 0, **kwargs) -> dict[str, LabelledSequences]:
    """Independent train / val / test sets of ``n``, ``n // 4`` and ``n // 4`` sequences."""
    return {"train": planted_set(n, length, seed, **kwargs), "val": planted_set(n // 4, length, seed + 1, **kwargs),
            "test": planted_set(n // 4, length, seed + 2, **kwargs)}
