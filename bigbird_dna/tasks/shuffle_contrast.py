"""Shuffle contrast: a label-free warm-up that gives a classifier's encoder motif detectors first.

Some tasks give a motif detector nothing to learn from until something else is learned too. When
both classes hold the same motifs and only their order or spacing differs (motif syntax), a
detector of either motif is no use without the rule that reads their order, and the rule no use
without the detectors: trained on the labels alone, the classifier stays at chance. What the
training sequences do share is the motifs themselves: they are what the sequences hold more often
than sequences of the same base composition would. Motif finders (MEME's and HOMER's shuffled
backgrounds) use exactly this.

So for the first ``steps`` optimizer steps (``task.shuffle_contrast_steps``) the classifier learns
one thing: each training sequence against a copy of itself resampled from its own first-order
Markov chain (:func:`markov_resample`; with char tokens, the sequence's dinucleotide frequencies
in expectation, motifs gone). A linear score on the head's pooled vector tells them apart (BCE).
Then the labels take over, with the detectors in place. The labels are not read during the
warm-up; the contrast score is not used after it, nor exported.

A batch of ``B`` sequences becomes ``2B`` rows during the warm-up, so those steps cost about twice
as much as label steps. Measured in ``docs/metrics.md`` ("Labelled defaults", the spacing rule).
"""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.model.heads import SequencePooling


def body_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    """``[B, T]`` bool, True on the body of each ``[CLS] body [SEP]`` row (right-padded;
    ``attention_mask`` None: every row fills ``T``)."""
    batch, seq = input_ids.shape
    length = (attention_mask.sum(1) if attention_mask is not None
              else torch.full((batch,), seq, device=input_ids.device))
    position = torch.arange(seq, device=input_ids.device)
    return (position >= 1) & (position < length.unsqueeze(1) - 1)


def markov_resample(input_ids: torch.Tensor, body: torch.Tensor,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """Each row's body resampled from that row's own first-order Markov chain of tokens.

    The first body token is kept; each next one is the successor of a random occurrence, in the
    row's body, of the current token (a token never followed by another: a random body token of the
    row). With char tokens this keeps each row's base and dinucleotide frequencies in expectation
    and breaks every longer word, motifs included. Positions outside ``body`` (``[CLS]``,
    ``[SEP]``, padding) are left as they are. Memory is ``O(B * T)`` whatever the vocabulary
    (k-mer and BPE ids included), and nothing is read back to the host.

    Args:
        input_ids: ``[B, T]`` int64 token ids.
        body: ``[B, T]`` bool, the positions to resample (:func:`body_mask`).
        generator: the random source (``None``: torch's global one, seeded with the run).

    Returns:
        ``[B, T]`` int64, on ``input_ids``' device. The loop runs over ``T``: about a millisecond
        per 20 positions of a batch on a CPU.
    """
    batch, seq = input_ids.shape
    if seq < 3:
        return input_ids.clone()
    # every (token, successor) pair of the body, sorted by token; pairs outside the body sort last
    follows = body[:, :-1] & body[:, 1:]
    keys = torch.where(follows, input_ids[:, :-1], torch.iinfo(input_ids.dtype).max)
    keys, order = keys.sort(dim=1)
    successors = input_ids[:, 1:].gather(1, order)
    # body positions first, for the fallback draw
    body_positions = (~body).to(torch.int8).argsort(dim=1, stable=True)
    body_count = body.sum(1, keepdim=True)

    def uniform(count: torch.Tensor) -> torch.Tensor:  # [B, 1] -> an index in [0, count), 0 for count 0
        draw = torch.rand(count.shape, generator=generator, device=count.device)
        return (draw * count).long().clamp(max=(count - 1).clamp(min=0))

    out = input_ids.clone()
    current = input_ids[:, 1:2]  # [B, 1]
    for t in range(2, seq):
        current = current.contiguous()
        low = torch.searchsorted(keys, current, side="left")
        count = torch.searchsorted(keys, current, side="right") - low
        followed = successors.gather(1, (low + uniform(count)).clamp(max=seq - 2))
        fallback = input_ids.gather(1, body_positions.gather(1, uniform(body_count)))
        drawn = torch.where(count > 0, followed, fallback)
        take = body[:, t:t + 1]
        out[:, t:t + 1] = torch.where(take, drawn, input_ids[:, t:t + 1])
        current = torch.where(take, drawn, current)
    return out


class ShuffleContrast(nn.Module):
    """The warm-up's score, ``[B, features] -> [B]`` logits of "a real sequence, not a resampled one".

    Args:
        features: the size of the head's pooled vector.
        steps: optimizer steps of the warm-up (``task.shuffle_contrast_steps``), at least 1;
            ``None``: not a warm-up, a loss of every step (:class:`PretrainingContrast`).
    """

    def __init__(self, features: int, steps: int | None):
        super().__init__()
        if steps is not None and steps < 1:
            raise InputError(f"task.shuffle_contrast_steps={steps} must be a step count >= 1, or 0 for no warm-up.")
        self.steps = steps
        self.score = nn.Linear(features, 1)

    def inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The warm-up's ``2B`` rows: the batch, then each row resampled (:func:`markov_resample`),
        with the same mask."""
        resampled = markov_resample(input_ids, body_mask(input_ids, attention_mask))
        mask = None if attention_mask is None else torch.cat([attention_mask, attention_mask])
        return torch.cat([input_ids, resampled]), mask

    def loss(self, pooled: torch.Tensor) -> torch.Tensor:
        """BCE of the score on ``pooled [2B, features]`` (:meth:`inputs`' rows): real first, 1; then 0."""
        logits = self.score(pooled).squeeze(-1).float()
        half = pooled.shape[0] // 2
        targets = torch.cat([torch.ones(half), torch.zeros(pooled.shape[0] - half)]).to(logits.device)
        return nn.functional.binary_cross_entropy_with_logits(logits, targets)


class PretrainingContrast(nn.Module):
    """The shuffle contrast as a pretraining loss beside the MLM's (``task.shuffle_contrast`` of
    ``task=mlm``): every window against its resampled copy, read through the pooling the
    classifiers' default head uses (``mean_max`` over every base), so that the encoder learns what
    genomic sequence holds beyond its dinucleotide composition (motifs, splice and codon signals),
    which a masked base alone barely asks for. Training only: not exported.

    Args:
        hidden_size: the encoder's hidden size.
        weight: the loss's factor beside the MLM's cross-entropy, > 0.
    """

    def __init__(self, hidden_size: int, weight: float):
        super().__init__()
        if not weight > 0:
            raise InputError(f"task.shuffle_contrast={weight} must be a loss weight > 0, or 0 for none.")
        self.weight = float(weight)
        self.pool = SequencePooling(hidden_size, "mean_max")
        self.contrast = ShuffleContrast(self.pool.output_size, steps=None)

    def inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
               ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``2B`` rows: the batch, then each row resampled (:meth:`ShuffleContrast.inputs`)."""
        return self.contrast.inputs(input_ids, attention_mask)

    def loss(self, hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """``weight`` times the contrast's BCE on ``hidden [2B, T, hidden_size]`` (:meth:`inputs`' rows)."""
        return self.weight * self.contrast.loss(self.pool(hidden, attention_mask))
