"""DeePromoter-style negatives: a positive cut into chunks, some kept, the rest changed.

DeePromoter (Oubounyt et al. 2019), as used by the BigBird paper's promoter task: cut each positive into
``num_chunks=20`` equal chunks, keep ``num_kept=8`` unchanged, and "substitute randomly" the other
12. Implementations read "substitute" two ways, and both are offered:

- ``substitute``: each changed chunk becomes uniform random A/C/G/T (egochao/DeePromoter ``neggen``);
- ``shuffle``: the changed chunks swap places among their own positions, which keeps the base
  composition (GENA_LM ``dataset_generator.py``).

Chunk boundaries are ``floor(i * len / num_chunks)``, so chunks differ in length by at most one base
and the negative always has the positive's length. Randomness comes from the ``numpy.random.Generator``
passed in, never from global NumPy state, so negatives do not depend on what else drew numbers.
"""

from __future__ import annotations

import numpy as np

from bigbird_dna.errors import InputError

MODES = ("substitute", "shuffle")
_BASES = np.frombuffer(b"ACGT", dtype=np.uint8)


def deepromoter_negative(seq: str, rng: np.random.Generator, mode: str = "substitute",
                         num_chunks: int = 20, num_kept: int = 8) -> str:
    """A negative made from the positive ``seq``.

    Args:
        seq: the positive sequence.
        rng: the source of randomness (seed it per sample for reproducible negatives).
        mode: ``"substitute"`` (random bases) or ``"shuffle"`` (permute the changed chunks).
        num_chunks: equal chunks the sequence is cut into.
        num_kept: chunks left unchanged, at random positions.

    Returns:
        A string of ``len(seq)`` bases.
    """
    if mode not in MODES:
        raise InputError(f"unknown negative mode {mode!r}; choose one of {MODES} (data.negatives.mode).")
    if not 0 <= num_kept < num_chunks:
        raise InputError(f"need 0 <= num_kept < num_chunks, got num_kept={num_kept}, num_chunks={num_chunks}.")
    bounds = [i * len(seq) // num_chunks for i in range(num_chunks + 1)]
    chunks = [seq[bounds[i]:bounds[i + 1]] for i in range(num_chunks)]
    changed = np.sort(rng.choice(num_chunks, size=num_chunks - num_kept, replace=False))
    if mode == "substitute":
        for i in changed:
            chunks[i] = _BASES[rng.integers(0, 4, size=len(chunks[i]))].tobytes().decode()
    else:
        originals = [chunks[i] for i in changed]
        for i, j in zip(changed, rng.permutation(len(changed))):
            chunks[i] = originals[j]
    return "".join(chunks)
