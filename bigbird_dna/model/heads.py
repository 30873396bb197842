"""Output heads on top of :class:`~bigbird_dna.model.encoder.BigBirdEncoder` hidden states."""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.model.config import EncoderConfig


class MLMHead(nn.Module):
    """BERT-style masked-token head: dense + GELU + LayerNorm, then a decoder tied to the embeddings.

    Args:
        config: the encoder's config.
        embedding: the encoder's token embedding, whose weight the decoder shares.
    """

    def __init__(self, config: EncoderConfig, embedding: nn.Embedding):
        super().__init__()
        self.transform = nn.Sequential(
            nn.Linear(config.hidden_size, config.hidden_size),
            nn.GELU(),
            nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps),
        )
        self.embedding = embedding
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """``hidden [..., hidden_size]`` -> logits ``[..., vocab_size]``."""
        return self.transform(hidden) @ self.embedding.weight.t() + self.bias
