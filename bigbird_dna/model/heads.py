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


class ClassificationHead(nn.Module):
    """Sequence classifier on the [CLS] vector: dropout, then one linear layer (the paper's head).

    With ``hidden_size`` set, a hidden layer comes first (dense -> GELU -> dropout), as in HF's
    ``BigBirdClassificationHead``; the default ``None`` is the paper's single linear layer.

    Args:
        input_size: the encoder's hidden size.
        num_labels: independent binary outputs (1 for promoters, 919 for chromatin profiles).
        dropout: dropout on the [CLS] vector (and after the hidden layer).
        hidden_size: width of the optional hidden layer.
    """

    def __init__(self, input_size: int, num_labels: int, dropout: float = 0.1, hidden_size: int | None = None):
        super().__init__()
        layers: list[nn.Module] = [nn.Dropout(dropout)]
        if hidden_size:
            layers += [nn.Linear(input_size, hidden_size), nn.GELU(), nn.Dropout(dropout)]
            input_size = hidden_size
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(input_size, num_labels)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        """``hidden [B, T, H]`` (position 0 is [CLS]) -> logits ``[B, num_labels]``."""
        return self.out(self.body(hidden[:, 0]))
