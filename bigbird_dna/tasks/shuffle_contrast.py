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
as much as label steps. Measured in ``docs/metrics.md`` ("Motif syntax").
"""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.errors import InputError


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

    The first body token is kept; each next one is drawn from the counts of the tokens that follow
    the current one in the row's body (a token never followed by another: the row's token
    frequencies). With char tokens this keeps each row's base and dinucleotide frequencies in
    expectation and breaks every longer word, motifs included. Positions outside ``body``
    (``[CLS]``, ``[SEP]``, padding) are left as they are.

    Args:
        input_ids: ``[B, T]`` int64 token ids.
        body: ``[B, T]`` bool, the positions to resample (:func:`body_mask`).
        generator: the random source (``None``: torch's global one, seeded with the run).

    Returns:
        ``[B, T]`` int64, on ``input_ids``' device. The loop runs over ``T``: about a millisecond
        per 20 positions of a batch on a CPU.
    """
    batch, seq = input_ids.shape
    vocab = int(input_ids.max()) + 1
    rows = torch.arange(batch, device=input_ids.device)
    follows = (body[:, :-1] & body[:, 1:]).float()
    counts = torch.zeros(batch, vocab * vocab, device=input_ids.device)
    counts.scatter_add_(1, input_ids[:, :-1] * vocab + input_ids[:, 1:], follows)
    frequencies = torch.zeros(batch, vocab, device=input_ids.device).scatter_add_(1, input_ids, body.float())
    # a state with no successor falls back to the row's frequencies; 1e-9 keeps every row drawable
    chain = counts.view(batch, vocab, vocab) + 1e-6 * frequencies.unsqueeze(1) + 1e-9
    out = input_ids.clone()
    current = input_ids[:, min(1, seq - 1)]
    for t in range(2, seq):
        drawn = torch.multinomial(chain[rows, current], 1, generator=generator).squeeze(1)
        take = body[:, t]
        out[:, t] = torch.where(take, drawn, input_ids[:, t])
        current = torch.where(take, drawn, current)
    return out


class ShuffleContrast(nn.Module):
    """The warm-up's score, ``[B, features] -> [B]`` logits of "a real sequence, not a resampled one".

    Args:
        features: the size of the head's pooled vector.
        steps: optimizer steps of the warm-up (``task.shuffle_contrast_steps``), at least 1.
    """

    def __init__(self, features: int, steps: int):
        super().__init__()
        if steps < 1:
            raise InputError(f"task.shuffle_contrast_steps={steps} must be a step count >= 1, or 0 for no warm-up.")
        self.steps = int(steps)
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
