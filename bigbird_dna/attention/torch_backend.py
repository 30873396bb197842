"""Block-sparse attention in pure PyTorch: the backend for CPUs and any device without Triton.

It gathers the key/value blocks of each query block, so memory is O(nnz * b^2), never O(T^2).
Rows much longer than the typical row (global query blocks) are computed as a separate group so
that short rows are not padded to the full sequence. Conventions:
:mod:`bigbird_dna.attention.conventions`.
"""

from __future__ import annotations

import math

import torch

from bigbird_dna.attention.conventions import check_attention_inputs, compute_dtype, masked_softmax
from bigbird_dna.attention.layout import BlockLayout


def row_groups(layout: BlockLayout) -> list[torch.Tensor]:
    """Flattened rows ``h*nq + i`` split into short rows and long rows (more than twice the median
    length, e.g. global query blocks); each group is padded to its own longest row. Empty groups
    are left out."""
    lengths = layout.row_lengths()
    is_long = lengths > 2 * lengths.median()
    groups = (torch.nonzero(~is_long).flatten(), torch.nonzero(is_long).flatten())
    return [rows for rows in groups if rows.numel()]


def _gather_rows(layout: BlockLayout, rows: torch.Tensor):
    """Key blocks of flattened rows ``rows [R]`` padded to the longest: (idx, ok), both ``[R, W]``."""
    lengths = layout.row_lengths()[rows]
    width = int(lengths.max()) if rows.numel() else 0
    slot = torch.arange(width, device=rows.device)
    ok = slot < lengths[:, None]
    pos = (layout.kv_ptr[rows].long()[:, None] + slot).clamp(max=max(layout.nnz - 1, 0))
    idx = torch.where(ok, layout.kv_idx[pos].long(), 0)
    return idx, ok


def _attend_rows(qb, kb, vb, key_ok, layout: BlockLayout, rows: torch.Tensor, scale: float) -> torch.Tensor:
    """Attention output ``[B, R, b, D]`` of flattened query rows ``rows [R]`` (``r = h*nb + i``).

    ``qb, kb, vb``: ``[B, H*nb, b, D]`` blocked tensors; ``key_ok``: ``[B, nb, b]`` real keys.
    """
    B, _, b, D = qb.shape
    nb = layout.num_k_blocks
    idx, ok = _gather_rows(layout, rows)  # [R, W]
    R, W = idx.shape
    head_idx = (rows // layout.num_q_blocks)[:, None] * nb + idx  # [R, W] into H*nb
    # index_select, not advanced indexing: its backward is index_add_, several times faster on CPU
    # than the accumulating index_put_ that advanced indexing differentiates to.
    flat = head_idx.reshape(-1)
    keys = kb.index_select(1, flat).reshape(B, R, W * b, D)
    values = vb.index_select(1, flat).reshape(B, R, W * b, D)
    mask = (key_ok[:, idx.reshape(-1)].reshape(B, R, W, b) & ok[None, :, :, None]).reshape(B, R, 1, W * b)
    scores = qb.index_select(1, rows) @ keys.transpose(-1, -2) * scale  # [B, R, b, W*b]
    return masked_softmax(scores, mask) @ values


def torch_block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                                 key_padding_mask: torch.Tensor | None = None,
                                 scale: float | None = None) -> torch.Tensor:
    """Block-sparse attention in pure PyTorch, differentiable by autograd, for any layout.

    Computes in fp32 (fp64 for fp64 inputs) and returns ``[B, H, T, D]`` in the input dtype. Rows
    are attended in the groups of :func:`row_groups`, so memory stays O(nnz * b^2) for BigBird
    patterns.
    """
    check_attention_inputs(q, k, v, layout, key_padding_mask)
    B, H, T, D = q.shape
    dtype = compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    b, nb = layout.block_size, layout.num_q_blocks
    pad = nb * b - T
    valid = torch.ones(B, T, dtype=torch.bool, device=q.device) if key_padding_mask is None else key_padding_mask
    valid = torch.nn.functional.pad(valid, (0, pad), value=False)  # [B, nb*b]

    def blocked(x):  # [B, H, T, D] -> [B, H*nb, b, D]
        return torch.nn.functional.pad(x.to(dtype), (0, 0, 0, pad)).reshape(B, H * nb, b, D)

    qb, kb, vb = blocked(q), blocked(k), blocked(v)
    key_ok = valid.reshape(B, nb, b)
    out = qb.new_zeros(B, H * nb, b, D)
    for rows in row_groups(layout):
        out = out.index_copy(1, rows, _attend_rows(qb, kb, vb, key_ok, layout, rows, scale))
    out = out.reshape(B, H, nb * b, D)[:, :, :T] * valid[:, None, :T, None]
    return out.to(q.dtype)
