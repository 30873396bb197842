"""DeePromoter negatives: 20 chunks, 8 kept, 12 substituted with random bases or shuffled."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from bigbird_dna.data.promoter.negatives import deepromoter_negative
from bigbird_dna.errors import InputError
from tests.promoter.conftest import lambda_seq


def _chunks(seq, n=20):
    return [seq[i * len(seq) // n:(i + 1) * len(seq) // n] for i in range(n)]


@pytest.mark.parametrize("length", [8000, 1003, 37])
def test_substitution_keeps_exactly_8_of_20_chunks_and_the_length(length):
    positive = lambda_seq()[:length]
    negative = deepromoter_negative(positive, np.random.default_rng(0), "substitute")
    assert len(negative) == len(positive) and set(negative) <= set("ACGT")
    same = [a == b for a, b in zip(_chunks(positive), _chunks(negative))]
    # 12 chunks are redrawn; a redrawn chunk equals the original only by chance (possible for 1-2 bp chunks)
    assert sum(same) >= 8 and (length < 100 or sum(same) == 8)


def test_shuffling_permutes_12_chunks_among_their_positions_and_keeps_composition():
    positive = lambda_seq()[:8000]
    negative = deepromoter_negative(positive, np.random.default_rng(1), "shuffle")
    assert Counter(negative) == Counter(positive)
    before, after = _chunks(positive), _chunks(negative)
    kept = [i for i in range(20) if before[i] == after[i]]
    assert len(kept) >= 8
    assert Counter(after) == Counter(before)  # the same chunks, rearranged


def test_negatives_are_reproducible_from_the_generator_seed():
    positive = lambda_seq()[:2000]
    one = deepromoter_negative(positive, np.random.default_rng(7))
    assert one == deepromoter_negative(positive, np.random.default_rng(7))
    assert one != deepromoter_negative(positive, np.random.default_rng(8))


def test_unknown_mode_is_refused():
    with pytest.raises(InputError, match="substitute"):
        deepromoter_negative("ACGT" * 10, np.random.default_rng(0), "invert")
