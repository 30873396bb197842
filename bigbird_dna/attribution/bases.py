"""Per-base arrays of attributions: letters, one-hot, token-to-base spreading, strand mirroring.

Positions are 0-based along the sequence as given; letter columns are in ``ACGT`` order. A value
computed on the reverse complement of a sequence of length ``L`` is mirrored back onto the
forward bases: position ``j`` of the reverse strand is forward position ``L - 1 - j``, and its
letter column ``b`` is the complement's column (``ACGT`` reversed).
"""

from __future__ import annotations

from typing import Sequence

import torch

LETTERS = "ACGT"
_INDEX = {letter: i for i, letter in enumerate(LETTERS)}


def one_hot(seq: str) -> torch.Tensor:
    """float32 ``[L, 4]``: 1 in the column of each base's letter (any case); N and IUPAC codes are
    all-zero rows."""
    out = torch.zeros(len(seq), 4)
    for position, base in enumerate(seq.upper()):
        column = _INDEX.get(base)
        if column is not None:
            out[position, column] = 1.0
    return out


def mirror(values: torch.Tensor) -> torch.Tensor:
    """Values ``[L]`` or ``[L, 4]`` of a reverse complement, on the forward bases (module docstring)."""
    flipped = values.flip(0)
    return flipped.flip(1) if flipped.dim() == 2 else flipped


def spread_over_bases(token_values: torch.Tensor, offsets: Sequence[tuple[int, int]], length: int) -> torch.Tensor:
    """float32 ``[length]``: each token's value ``token_values [T]`` shared equally by the bases
    ``[a, b)`` it spells (``offsets``, 0-based half-open), so the sum over bases is the sum over tokens."""
    out = torch.zeros(length)
    for value, (start, end) in zip(token_values.tolist(), offsets):
        if end > start:
            out[start:end] = value / (end - start)
    return out


def padded(rows: Sequence[torch.Tensor]) -> torch.Tensor:
    """Stack ``[L_i]`` or ``[L_i, 4]`` rows into ``[N, max L]`` (or ``[N, max L, 4]``), NaN past a
    row's end; float32."""
    if not rows:
        return torch.empty(0, 0)
    width = max(len(row) for row in rows)
    out = torch.full((len(rows), width, *rows[0].shape[1:]), float("nan"))
    for i, row in enumerate(rows):
        out[i, :len(row)] = row
    return out
