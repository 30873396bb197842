"""BERT masking for MLM: select 15% of the real tokens; of those, 80% become [MASK], 10% a random
token and 10% stay unchanged (training). Evaluation (``all_mask=True``) turns every selected token
into [MASK], so every scored position must be predicted from context alone. Special tokens ([CLS],
[SEP], [PAD], ...) are never selected.

Span masking (``span > 1``, training only: ``data.mask_span``) selects runs of ``span`` tokens
instead of single ones, each run [MASK]ed, randomised or kept as a whole (SpanBERT, Joshi et al.,
TACL 2020). With one base per token and a convolution stem, a lone masked base is mostly told by
its immediate neighbours; a masked run must be told from what lies around it.
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
    span: int = 1,
    replacement_ids: torch.Tensor | None = None,
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
        span: tokens per selected run. 1: BERT's single tokens (the same random draws as ever).
            More: runs start at a maskable token with probability ``1 - (1 - mask_prob) ** (1 / span)``
            and cover the next ``span`` positions (maskable ones only; runs may overlap), so that
            ``mask_prob`` of the tokens are selected in expectation (fewer within ``span`` of a
            row's end); a run's 80/10/10 action is drawn at its start.
        replacement_ids: 1-D, the ids a random replacement is drawn from (:func:`replacement_candidates`
            of the same vocabulary and ``unmaskable_ids``; ``None``: computed here, which on a
            GPU waits for the device, as every data-dependent shape does).

    Returns:
        ``(inputs, labels)``, both ``[B, T]`` on ``input_ids``' device (where the random numbers are
        drawn too, so ``generator`` and ``unmaskable_ids`` must live there): ``labels`` holds the
        original id at selected positions and ``IGNORE_INDEX`` elsewhere.
    """
    if span < 1:
        raise ValueError(f"span={span} must be a token count >= 1")
    maskable = ~torch.isin(input_ids, unmaskable_ids)
    start_prob = mask_prob if span == 1 else 1 - (1 - mask_prob) ** (1 / span)
    device = input_ids.device
    selected = (torch.rand(input_ids.shape, generator=generator, device=device) < start_prob) & maskable
    action = torch.rand(input_ids.shape, generator=generator, device=device)
    if span > 1:
        selected, action = spread_runs(selected, action, span)
        selected &= maskable
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, IGNORE_INDEX))

    to_mask = selected & ((action < 0.8) | all_mask)
    to_random = selected & (action >= 0.8) & (action < 0.9) & (not all_mask)

    candidates = (replacement_ids if replacement_ids is not None
                  else replacement_candidates(vocab_size, unmaskable_ids))
    random_ids = candidates[torch.randint(len(candidates), input_ids.shape, generator=generator, device=device)]

    inputs = torch.where(to_mask, torch.full_like(input_ids, mask_id), input_ids)
    inputs = torch.where(to_random, random_ids, inputs)
    return inputs, labels


def replacement_candidates(vocab_size: int, unmaskable_ids: torch.Tensor) -> torch.Tensor:
    """1-D int64, in increasing order: the ids of a vocabulary of ``vocab_size`` that are not in
    ``unmaskable_ids``, on its device; what a randomised masked token is drawn from."""
    allowed = torch.ones(vocab_size, dtype=torch.bool, device=unmaskable_ids.device)
    allowed[unmaskable_ids] = False
    return allowed.nonzero().squeeze(1)


def spread_runs(starts: torch.Tensor, action: torch.Tensor, span: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each True of ``starts [B, T]`` extended over the ``span`` positions from it (cut at ``T``),
    with its ``action [B, T]`` value carried along; where runs overlap, the later start's value.
    Returns ``(selected [B, T] bool, action [B, T])``."""
    length = starts.shape[1]
    selected, carried = torch.zeros_like(starts), action.clone()
    for shift in range(min(span, length) - 1, -1, -1):  # earliest starts first: later ones overwrite them
        from_start, moved = torch.zeros_like(starts), torch.zeros_like(action)
        from_start[:, shift:], moved[:, shift:] = starts[:, :length - shift], action[:, :length - shift]
        carried = torch.where(from_start, moved, carried)
        selected |= from_start
    return selected, carried
