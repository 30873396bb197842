"""``model/networks.py``: the composed networks that predict, the API, the tasks and the HF classes share."""

import pytest
import torch

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.networks import SequenceClassifier
from bigbird_dna.model.outputs import SOFTMAX, ModelOutput

CONFIG = dict(vocab_size=40, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, max_positions=512,
              dropout=0.0, conv_kernel=9, attention={"block_size": 16, "backend": "torch"})


@pytest.mark.parametrize("pooling", ["cls", "mean_max"])
def test_classifier_logits_equal_the_full_pass_through_the_head(pooling):
    """A cls head computes only [CLS] in the last layer; its logits equal pooling every token's states."""
    torch.manual_seed(0)
    model = SequenceClassifier(EncoderConfig(**CONFIG), ModelOutput(SOFTMAX, ("a", "b", "c")),
                               head={"pooling": pooling}).eval()
    ids = torch.randint(5, 40, (3, 300), generator=torch.Generator().manual_seed(1))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[2, 250:] = False
    ids[~mask] = 0
    with torch.no_grad():
        full = model.head(model.encoder(ids, mask), mask)
        logits = model(ids, mask)
    torch.testing.assert_close(logits, full, atol=2e-5, rtol=1e-4)
    probs = model.predict_proba(ids, mask)
    assert probs.dtype == torch.float32 and torch.allclose(probs.sum(-1), torch.ones(3))
