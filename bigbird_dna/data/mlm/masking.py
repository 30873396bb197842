"""BERT masking for MLM: select 15% of the real tokens; of those, 80% become [MASK], 10% a random
token and 10% stay unchanged (training). Evaluation (``all_mask=True``) turns every selected token
into [MASK], so every scored position must be predicted from context alone. Special tokens ([CLS],
[SEP], [PAD], ...) are never selected.
"""

from __future__ import annotations

import torch

IGNORE_INDEX = -100


def mask_tokens(
    input_ids: torch.Tensor,
    unmaskable_ids: torch.Tensor,
    mask_id: int,
    vocab_size: int,
    mask_prob: float = 0.15,
    generator: torch.Generator | None = None,
    all_mask: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask a batch of token ids.

    Args:
        input_ids: ``[B, T]`` int64 token ids, padded with the pad id.
        unmaskable_ids: 1-D tensor of ids (special tokens, N runs) that are never masked, nor used
            as random replacements.
        mask_id: the [MASK] id.
        vocab_size: size of the vocabulary.
        mask_prob: fraction of real tokens to select.
        generator: optional torch generator for reproducible masks.
        all_mask: replace every selected token by [MASK] (evaluation), instead of 80/10/10. The
            selection draws the same random numbers either way.

    Returns:
        ``(inputs, labels)``, both ``[B, T]``: ``labels`` holds the original id at selected
        positions and ``IGNORE_INDEX`` elsewhere.
    """
    maskable = ~torch.isin(input_ids, unmaskable_ids)
    selected = (torch.rand(input_ids.shape, generator=generator) < mask_prob) & maskable
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))

    action = torch.rand(input_ids.shape, generator=generator)
    to_mask = selected & ((action < 0.8) | all_mask)
    to_random = selected & (action >= 0.8) & (action < 0.9) & (not all_mask)

    allowed = torch.ones(vocab_size, dtype=torch.bool)
    allowed[unmaskable_ids] = False
    candidates = allowed.nonzero().squeeze(1)
    random_ids = candidates[torch.randint(len(candidates), input_ids.shape, generator=generator)]

    inputs = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, labels
