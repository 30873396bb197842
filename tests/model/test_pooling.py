"""Classifier-head pooling reads real tokens only: padding never changes the pooled vector."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.heads import POOLINGS, SequencePooling


@pytest.mark.parametrize("pooling", POOLINGS)
def test_pooling_ignores_padding_and_matches_the_unpadded_sequence(pooling):
    torch.manual_seed(0)
    pool = SequencePooling(8, pooling)
    real = torch.randn(1, 5, 8)
    padded = torch.cat([real, torch.full((1, 3, 8), 100.0)], dim=1)  # pads hold large values
    mask = torch.tensor([[True] * 5 + [False] * 3])
    alone = pool(real, torch.ones(1, 5, dtype=torch.bool))
    assert torch.allclose(pool(padded, mask), alone, atol=1e-6)
    expected = {"cls": real[:, 0], "mean": real.mean(1), "max": real.amax(1),
                "mean_max": torch.cat([real.mean(1), real.amax(1)], -1)}.get(pooling)
    if expected is not None:
        assert torch.allclose(alone, expected, atol=1e-6)
    assert alone.shape[-1] == pool.output_size


def test_an_unknown_pooling_is_an_input_error():
    with pytest.raises(InputError, match="task.head.pooling"):
        SequencePooling(8, "sum")
