"""One-hot DNA as the DeepSEA bundle stores it: ``[n, 4, L]`` in A, G, C, T channel order, an
all-zero column for N."""

from __future__ import annotations

import numpy as np

from bigbird_dna.errors import InputError

BASES = "AGCT"  # one-hot channel order of the bundle
_LETTERS = np.frombuffer(f"{BASES}N".encode(), dtype=np.uint8)  # code 4: no channel set
_CODES = np.full(256, 255, dtype=np.uint8)  # ASCII -> channel; 255 for N and anything else
_CODES[np.frombuffer(BASES.encode(), dtype=np.uint8)] = np.arange(4)


def check_values(x: np.ndarray, y: np.ndarray, where: str) -> None:
    """Refuse labels other than 0/1 and one-hot columns with more than one base set.

    Args:
        x: ``[n, 4, L]`` one-hot sequences.
        y: ``[n, C]`` labels.
        where: the file and rows, for the message.
    """
    bad = ~np.isin(y, (0, 1))
    if bad.any():
        row, label = map(int, np.argwhere(bad)[0])
        raise InputError(f"{where}: label {label} of sample {row} is {y[row, label]!r}; DeepSEA labels are 0 or 1. "
                         "Check that data.y_key names the label array.")
    hot = (x != 0).sum(axis=1)  # [n, L]: channels set per position
    if (hot > 1).any():
        row, pos = map(int, np.argwhere(hot > 1)[0])
        raise InputError(f"{where}: position {pos} of sample {row} has {int(hot[row, pos])} bases set; a one-hot "
                         "column has at most one (none = N). Check that data.x_key names the sequence array.")


def decode_onehot(x: np.ndarray) -> list[str]:
    """``x [n, 4, L]`` one-hot in A, G, C, T order -> ``n`` strings; an all-zero column is ``N``."""
    codes = np.full((x.shape[0], x.shape[2]), 4, dtype=np.uint8)  # [n, L], N unless a channel is set
    for channel in range(3, -1, -1):  # uint8 masks, not argmax's int64: a 1024-sample slab costs 1 MB each
        codes[x[:, channel] != 0] = channel
    letters = _LETTERS[codes]
    return [row.tobytes().decode("ascii") for row in letters]


def encode_onehot(seqs: list[str]) -> np.ndarray:
    """Strings of equal length -> ``[n, 4, L]`` uint8 one-hot in A, G, C, T order; other letters -> 0."""
    codes = _CODES[np.frombuffer("".join(seqs).upper().encode("ascii"), dtype=np.uint8)]
    codes = codes.reshape(len(seqs), -1)  # [n, L]
    onehot = np.zeros((codes.shape[0], 4, codes.shape[1]), dtype=np.uint8)
    for channel in range(4):
        onehot[:, channel] = codes == channel
    return onehot
