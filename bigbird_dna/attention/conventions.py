"""What every attention backend shares: the input conventions and their check, and a masked
softmax that stays NaN-free for fully masked rows.

- ``q, k, v``: ``[B, H, T, D]``; block ``i`` holds tokens ``[i*b, (i+1)*b)``, the last block may be
  partial (its missing tokens are masked). The layout must have ``H`` heads and ``ceil(T/b)``
  query and key blocks.
- ``key_padding_mask``: optional bool ``[B, T]``, True = real token. Padding keys are never
  attended; padding query rows, and rows with no attendable key, output exactly 0.
- ``scale`` defaults to ``1/sqrt(D)``.
"""

from __future__ import annotations

import torch

from bigbird_dna.attention.layout import BlockLayout, num_blocks_for
from bigbird_dna.errors import InputError


def check_attention_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                           key_padding_mask: torch.Tensor | None) -> None:
    """Raise :class:`InputError` unless the tensors and the layout fit together."""
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise InputError(f"q, k, v must all be [batch, heads, seq, head_dim], got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not q.is_floating_point() or q.dtype != k.dtype or q.dtype != v.dtype:
        raise InputError(f"q, k, v must share one float dtype, got {q.dtype}, {k.dtype}, {v.dtype}")
    B, H, T, _ = q.shape
    nb = num_blocks_for(T, layout.block_size)
    if (layout.num_heads, layout.num_q_blocks, layout.num_k_blocks) != (H, nb, nb):
        raise InputError(f"layout {layout} does not fit {H} heads x {T} tokens (needs {nb} blocks of "
                         f"{layout.block_size}); build it with layout_for(..., num_heads={H}, num_blocks={nb})")
    if layout.device != q.device:
        raise InputError(f"layout is on {layout.device} but q is on {q.device}; use layout.to(q.device)")
    if key_padding_mask is not None and (key_padding_mask.dtype != torch.bool
                                         or key_padding_mask.shape != (B, T)):
        raise InputError(f"key_padding_mask must be bool [batch, seq] = [{B}, {T}] (True = real token), "
                         f"got {key_padding_mask.dtype} {tuple(key_padding_mask.shape)}")


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """fp32 for half types and fp32, fp64 stays fp64."""
    return torch.promote_types(dtype, torch.float32)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim restricted to ``mask``; fully masked rows give all zeros.

    Uses a finite fill value (not -inf) so that fully masked rows stay NaN-free in the backward.
    """
    scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return torch.softmax(scores, dim=-1) * mask
