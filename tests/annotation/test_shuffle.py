"""The dinucleotide shuffle keeps every dinucleotide count, the first and the last base exactly."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bigbird_dna.data.annotation.shuffle import dinucleotide_shuffle


def dinucleotides(seq: str) -> Counter:
    return Counter(seq[i:i + 2] for i in range(len(seq) - 1))


@pytest.mark.parametrize("length", [3, 4, 10, 57, 300, 2000])
@pytest.mark.parametrize("alphabet", ["ACGT", "AT", "ACGTN"])
def test_dinucleotide_counts_are_preserved(length, alphabet):
    rng = np.random.default_rng(length)
    for trial in range(20):
        seq = "".join(rng.choice(list(alphabet), length))
        shuffled = dinucleotide_shuffle(seq, np.random.default_rng(trial))
        assert len(shuffled) == len(seq)
        assert dinucleotides(shuffled) == dinucleotides(seq)
        assert shuffled[0] == seq[0] and shuffled[-1] == seq[-1]


def test_shuffle_changes_the_sequence_and_is_seeded():
    seq = "".join(np.random.default_rng(0).choice(list("ACGT"), 300))
    one = dinucleotide_shuffle(seq, np.random.default_rng(1))
    assert one != seq
    assert one == dinucleotide_shuffle(seq, np.random.default_rng(1))
    assert one != dinucleotide_shuffle(seq, np.random.default_rng(2))


def test_short_and_repetitive_sequences():
    assert dinucleotide_shuffle("AC", np.random.default_rng(0)) == "AC"
    assert dinucleotide_shuffle("AAAAAA", np.random.default_rng(0)) == "AAAAAA"
    assert dinucleotide_shuffle("ACACAC", np.random.default_rng(0)) == "ACACAC"  # the only walk
