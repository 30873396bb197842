"""The dense reference: block-sparse attention computed by materialising the ``[B, H, T, T]``
scores and masking them with the layout. Tests and benchmarks only; every backend is checked
against it. Conventions: :mod:`bigbird_dna.attention.conventions`.
"""

from __future__ import annotations

import math

import torch

from bigbird_dna.attention.conventions import check_attention_inputs, compute_dtype, masked_softmax
from bigbird_dna.attention.layout import BlockLayout


def dense_reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                              key_padding_mask: torch.Tensor | None = None,
                              scale: float | None = None) -> torch.Tensor:
    """Exact masked attention in fp32 (fp64 for fp64 inputs) from the dense token mask.

    Builds ``[B, H, T, T]`` scores, so use it only to test other backends. Returns ``[B, H, T, D]``
    in the input dtype.
    """
    check_attention_inputs(q, k, v, layout, key_padding_mask)
    B, H, T, D = q.shape
    dtype = compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    b = layout.block_size
    allowed = layout.to_block_mask().repeat_interleave(b, 1).repeat_interleave(b, 2)[None, :, :T, :T]
    valid = torch.ones(B, T, dtype=torch.bool, device=q.device) if key_padding_mask is None else key_padding_mask
    mask = allowed & valid[:, None, None, :]  # [B, H, T, T]
    scores = torch.einsum("bhqd,bhkd->bhqk", q.to(dtype), k.to(dtype)) * scale
    out = masked_softmax(scores, mask) @ v.to(dtype)
    return (out * valid[:, None, :, None]).to(q.dtype)
