"""Output heads on top of :class:`~bigbird_dna.model.encoder.BigBirdEncoder` hidden states."""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.model.composition import FITS, FittedKmerComposition, KmerComposition
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


POOLINGS = ("cls", "mean", "max", "mean_max", "attention")
# What the head pools: "bases", the encoder's output at every input token (through a pooling stem's
# upsampling path), or "tokens", the BigBird layers' states, one per `model.stem.pool` bases.
READS = ("bases", "tokens")


class SequencePooling(nn.Module):
    """One vector per sequence from hidden states, over real tokens only.

    ``cls``: the [CLS] vector (position 0; the paper's head). ``mean`` / ``max``: the mean / max over
    real tokens (``attention_mask`` True; [CLS] and [SEP] included). ``mean_max``: both, concatenated
    (``2 x hidden``). ``attention``: a learned softmax weighting of the tokens (one query vector).
    A CNN's global max pool finds a motif anywhere in the window; ``cls`` must learn to route it.

    Args:
        hidden_size: the encoder's hidden size.
        pooling: one of :data:`POOLINGS`.
    """

    def __init__(self, hidden_size: int, pooling: str = "cls"):
        super().__init__()
        if pooling not in POOLINGS:
            raise InputError(f"task.head.pooling={pooling!r} is not one of {POOLINGS}.")
        self.pooling = pooling
        self.output_size = 2 * hidden_size if pooling == "mean_max" else hidden_size
        self.score = nn.Linear(hidden_size, 1) if pooling == "attention" else None

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden [B, T, H]``, ``attention_mask [B, T]`` (True = real token) -> ``[B, output_size]``."""
        if self.pooling == "cls":
            return hidden[:, 0]
        if attention_mask is None:
            attention_mask = torch.ones(hidden.shape[:2], dtype=torch.bool, device=hidden.device)
        keep = attention_mask.unsqueeze(-1)  # [B, T, 1]
        if self.pooling == "attention":
            weights = self.score(hidden).squeeze(-1).masked_fill(~attention_mask, float("-inf")).softmax(-1)
            return torch.einsum("bt,bth->bh", weights.to(hidden.dtype), hidden)
        pooled = []
        if self.pooling in ("mean", "mean_max"):
            pooled.append((hidden * keep).sum(1) / keep.sum(1).clamp(min=1))
        if self.pooling in ("max", "mean_max"):
            pooled.append(hidden.masked_fill(~keep, torch.finfo(hidden.dtype).min).amax(1))
        return torch.cat(pooled, dim=-1)


class ClassificationHead(nn.Module):
    """Sequence classifier: pool the hidden states, dropout, then one linear layer.

    The default pooling is the [CLS] vector with one linear layer (the paper's head). With
    ``hidden_size`` set, a hidden layer comes first (dense -> GELU -> dropout), as in HF's
    ``BigBirdClassificationHead``.

    Args:
        input_size: the encoder's hidden size.
        num_labels: outputs (1 for promoters, 919 for chromatin profiles, C for C classes).
        dropout: dropout on the pooled vector (and after the hidden layer).
        hidden_size: width of the optional hidden layer.
        pooling: how the sequence becomes one vector; see :class:`SequencePooling`.
        read: which states are pooled, one of :data:`READS`: ``bases`` (every input token) or
            ``tokens`` (the BigBird tokens; the same as ``bases`` without a pooling stem), applied by
            :class:`~bigbird_dna.model.networks.ClassifierNetwork`.
        composition: the longest k-mer of the composition path
            (:class:`~bigbird_dna.model.composition.KmerComposition`), whose logits are added to the
            pooled vector's; 0: none.
        composition_fit: how the composition path learns, one of
            :data:`~bigbird_dna.model.composition.FITS`: ``joint`` with the network, or ``first``, a
            k-mer LR fitted before the network trains, then fixed.
    """

    def __init__(self, input_size: int, num_labels: int, dropout: float = 0.1, hidden_size: int | None = None,
                 pooling: str = "cls", read: str = "bases", composition: int = 0,
                 composition_fit: str = "joint"):
        super().__init__()
        if read not in READS:
            raise InputError(f"task.head.read={read!r} is not one of {READS}.")
        self.read = read
        self.pool = SequencePooling(input_size, pooling)
        input_size = self.pool.output_size
        layers: list[nn.Module] = [nn.Dropout(dropout)]
        if hidden_size:
            layers += [nn.Linear(input_size, hidden_size), nn.GELU(), nn.Dropout(dropout)]
            input_size = hidden_size
        self.body = nn.Sequential(*layers)
        self.out = nn.Linear(input_size, num_labels)
        if composition_fit not in FITS:
            raise InputError(f"task.head.composition_fit={composition_fit!r} is not one of {FITS}.")
        path = FittedKmerComposition if composition_fit == "first" else KmerComposition
        self.composition = path(composition, num_labels) if composition else None

    def forward(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None = None,
                input_ids: torch.Tensor | None = None) -> torch.Tensor:
        """``hidden [B, T, H]`` (position 0 is [CLS]), ``attention_mask [B, T]`` and, for the
        composition path, ``input_ids [B, T]`` -> logits ``[B, num_labels]``."""
        return self.classify(self.pool(hidden, attention_mask), input_ids)

    def classify(self, pooled: torch.Tensor, input_ids: torch.Tensor | None = None) -> torch.Tensor:
        """The layers after the pooling: ``pooled [B, pool.output_size]`` and the sequences'
        ``input_ids [B, T]`` (read by the composition path only) -> logits ``[B, num_labels]``."""
        logits = self.out(self.body(pooled))
        if self.composition is not None:
            if input_ids is None:
                raise InputError("this head has a composition path (task.head.composition), which reads input_ids.")
            logits = logits + self.composition(input_ids).to(logits.dtype)
        return logits
