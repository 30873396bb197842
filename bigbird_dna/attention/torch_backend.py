"""Block-sparse attention in pure PyTorch: the backend for CPUs and any device without Triton.

Two ways to compute the same thing, chosen per call by :func:`choose_method`:

- ``"gather"``: gathers the key/value blocks of each query block, so memory is O(nnz * b^2),
  never O(T^2). Rows much longer than the typical row (global query blocks) are computed as a
  separate group so that short rows are not padded to the full sequence.
- ``"dense"``: PyTorch's fused ``scaled_dot_product_attention`` with the layout expanded to a
  token mask. It computes every score, so it only pays where the layout covers much of the
  T x T grid: short sequences, where BigBird's window, global and random blocks leave few pairs
  out. The fused kernel never stores the scores; the bool mask costs ``H*T^2`` bytes
  (``B*H*T^2`` with padded keys), which the choice caps.

Conventions: :mod:`bigbird_dna.attention.conventions`.
"""

from __future__ import annotations

import math

import torch

from bigbird_dna.attention.conventions import check_attention_inputs, compute_dtype
from bigbird_dna.attention.layout import BlockLayout
from bigbird_dna.errors import InputError

METHODS = ("auto", "gather", "dense")
# "auto" takes the dense path at or above this share of the block grid. On 2 CPU cores (fp32, head
# dim 32, bigbird_itc; benchmarks/torch_attention_paths.py): at 55% dense is 1.7x faster forward and
# 1.3x forward+backward; at 30% gathering is 1.5-2x faster, at 15% 3x. Without keep_freed_memory()
# (training) gathering also pays page faults, and dense won by more (finetune_cpu: 1.67x per run).
DENSE_MIN_DENSITY = 0.4
DENSE_MAX_MASK_ELEMENTS = 1 << 25  # 32 MiB of bool mask per call at most, else gather

def row_groups(layout: BlockLayout, max_padding: float = 0.25) -> list[torch.Tensor]:
    """Flattened rows ``h*nq + i`` grouped so that padding each group to its longest row wastes little.

    Rows are taken longest first; a row joins the current group while padding it to the group's
    width adds at most ``max_padding`` of that width, else it starts a new group. So BigBird's global
    query rows (every block) never pad the window rows to the full sequence, and rows of one length
    need no slot mask. Rows with no key block are in no group (their output is 0). Each group is
    sorted ascending.
    """
    lengths = layout.row_lengths()
    order = torch.argsort(lengths, descending=True, stable=True)
    order = order[lengths[order] > 0]
    widths = lengths[order].tolist()
    groups, start = [], 0
    for i, width in enumerate(widths):
        if width < (1.0 - max_padding) * widths[start]:
            groups.append(order[start:i].sort().values)
            start = i
    if widths:
        groups.append(order[start:].sort().values)
    return groups


def _gather_rows(layout: BlockLayout, rows: torch.Tensor):
    """Key blocks of flattened rows ``rows [R]`` padded to the longest: (idx, ok), both ``[R, W]``."""
    lengths = layout.row_lengths()[rows]
    width = int(lengths.max()) if rows.numel() else 0
    slot = torch.arange(width, device=rows.device)
    ok = slot < lengths[:, None]
    pos = (layout.kv_ptr[rows].long()[:, None] + slot).clamp(max=max(layout.nnz - 1, 0))
    idx = torch.where(ok, layout.kv_idx[pos].long(), 0)
    return idx, ok


def _attend_rows(qb, kb, vb, key_ok, layout: BlockLayout, rows: torch.Tensor) -> torch.Tensor:
    """Attention output ``[B, R, b, D]`` of flattened query rows ``rows [R]`` (``r = h*nb + i``).

    ``qb``: ``[B, H*nb, b, D]`` blocked queries, already scaled; ``kb, vb``: blocked keys and
    values; ``key_ok``: ``[B, nb, b]`` real keys.
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
    scores = qb.index_select(1, rows) @ keys.transpose(-1, -2)  # [B, R, b, W*b]
    return _softmax_over(scores, mask) @ values


def _softmax_over(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """:func:`~bigbird_dna.attention.conventions.masked_softmax` with its full passes over
    ``scores [B, R, b, S]`` skipped where they change nothing: the fill when ``mask [B, R, 1, S]`` is
    all True (no padded slot or padding key, the usual training batch), and the final zeroing unless
    some row has no key at all (a masked entry of a row with a real key is already exactly 0 after the
    softmax). Host syncs on CUDA."""
    if bool(mask.all()):
        return torch.softmax(scores, dim=-1)
    probs = torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)
    has_key = mask.any(-1, keepdim=True)
    return probs if bool(has_key.all()) else probs * has_key


def choose_method(layout: BlockLayout, batch: int, padded_keys: bool) -> str:
    """``"dense"`` where the layout covers at least :data:`DENSE_MIN_DENSITY` of the block grid and
    the token mask stays under :data:`DENSE_MAX_MASK_ELEMENTS`, else ``"gather"``."""
    H, nq, nk, b = layout.num_heads, layout.num_q_blocks, layout.num_k_blocks, layout.block_size
    density = layout.nnz / max(H * nq * nk, 1)
    mask_elements = (batch if padded_keys else 1) * H * nq * nk * b * b
    return "dense" if density >= DENSE_MIN_DENSITY and mask_elements <= DENSE_MAX_MASK_ELEMENTS else "gather"


def token_mask(layout: BlockLayout, seq_len: int, rows: torch.Tensor | None = None) -> torch.Tensor:
    """The layout as a bool token mask ``[H, R, T]`` (True: query ``i`` may attend key ``j``) for the
    query tokens ``rows [R]`` (0-based), or every token (``R = T``) when ``rows`` is None."""
    block_of = torch.arange(seq_len, device=layout.device) // layout.block_size
    query_blocks = block_of if rows is None else rows // layout.block_size
    return layout.to_block_mask()[:, query_blocks][:, :, block_of]  # [H, nq, nk] -> [H, R, T]


def _dense_attention(q, k, v, layout: BlockLayout, valid: torch.Tensor | None, scale: float,
                     rows: torch.Tensor | None = None) -> torch.Tensor:
    """Masked dense attention ``[B, H, R, D]`` of queries ``q [B, H, R, D]`` (tokens ``rows``, or all
    of them) over ``k, v [B, H, T, D]``, all in the compute dtype; ``valid [B, T]``, or None when no
    key is padded. Rows without any allowed key get an all-True mask row (so the fused softmax has
    no 0/0) and are zeroed after, with padded query rows."""
    mask = token_mask(layout, k.shape[2], rows)[None]  # [1, H, R, T]
    if valid is not None:
        mask = mask & valid[:, None, None, :]  # [B, H, R, T]
    has_key = mask.any(-1, keepdim=True)  # [B|1, H, R, 1]
    keep = has_key if valid is None else has_key & (valid if rows is None else valid[:, rows])[:, None, :, None]
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask | ~has_key, scale=scale)
    if keep.device.type == "cpu" and bool(keep.all()):  # skip the pass over out; on a GPU, no host sync
        return out
    return out * keep


def attend_query_rows(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout, rows: torch.Tensor,
                      key_padding_mask: torch.Tensor | None = None, scale: float | None = None) -> torch.Tensor:
    """The attention output of the query tokens ``rows`` only: ``[B, H, R, D]``.

    Equal (up to rounding) to ``torch_block_sparse_attention(Q, k, v, layout, ...)[:, :, rows]``
    where ``Q[:, :, rows] = q``; the other queries are never computed. For inference that needs a
    few positions of the last layer (a ``[CLS]`` classifier reads position 0 only). Memory is
    ``H * R * T`` bools for the mask.

    Args:
        q: ``[B, H, R, D]``, the queries of tokens ``rows`` (0-based positions, int64 ``[R]``).
        k, v: ``[B, H, T, D]``, every key and value.
        layout, key_padding_mask, scale: as in :func:`torch_block_sparse_attention`.
    """
    check_attention_inputs(k, k, v, layout, key_padding_mask)
    dtype = compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    out = _dense_attention(q.to(dtype), k.to(dtype), v.to(dtype), layout, key_padding_mask, scale, rows)
    return out.to(q.dtype)


def torch_block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                                 key_padding_mask: torch.Tensor | None = None,
                                 scale: float | None = None, method: str = "auto") -> torch.Tensor:
    """Block-sparse attention in pure PyTorch, differentiable by autograd, for any layout.

    Computes in fp32 (fp64 for fp64 inputs) and returns ``[B, H, T, D]`` in the input dtype.
    ``method``: ``"gather"`` attends rows in the groups of :func:`row_groups`, so memory stays
    O(nnz * b^2) for BigBird patterns and little compute goes to padding slots; ``"dense"`` runs
    the fused dense kernel under the layout's token mask; ``"auto"`` picks by
    :func:`choose_method`. Both give the same result up to rounding. An all-True
    ``key_padding_mask`` on a CPU tensor is dropped (checking it on a GPU would be a host sync).
    """
    check_attention_inputs(q, k, v, layout, key_padding_mask)
    if method not in METHODS:
        raise InputError(f"unknown torch attention method {method!r}; choose one of {METHODS}")
    B, H, T, D = q.shape
    dtype = compute_dtype(q.dtype)
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    if key_padding_mask is not None and key_padding_mask.device.type == "cpu" and bool(key_padding_mask.all()):
        key_padding_mask = None
    if method == "auto":
        method = choose_method(layout, B, key_padding_mask is not None)
    if method == "dense":
        return _dense_attention(q.to(dtype), k.to(dtype), v.to(dtype), layout, key_padding_mask, scale).to(q.dtype)
    b, nb = layout.block_size, layout.num_q_blocks
    pad = nb * b - T
    valid = torch.ones(B, T, dtype=torch.bool, device=q.device) if key_padding_mask is None else key_padding_mask
    valid = torch.nn.functional.pad(valid, (0, pad), value=False)  # [B, nb*b]

    def blocked(x):  # [B, H, T, D] -> [B, H*nb, b, D]
        return torch.nn.functional.pad(x.to(dtype), (0, 0, 0, pad)).reshape(B, H * nb, b, D)

    qb, kb, vb = blocked(q * scale), blocked(k), blocked(v)  # scaling q is 1/(W*b/D) of scaling scores
    key_ok = valid.reshape(B, nb, b)
    groups = row_groups(layout)
    parts = [_attend_rows(qb, kb, vb, key_ok, layout, rows) for rows in groups]
    placed = torch.cat(groups) if groups else torch.zeros(0, dtype=torch.long, device=q.device)
    if placed.numel() < H * nb:  # rows without any key block output zeros
        parts.append(qb.new_zeros(B, H * nb - placed.numel(), b, D))
    out = torch.cat(parts, dim=1)  # rows in the order of `placed`, then the empty rows
    where = torch.full((H * nb,), placed.numel(), dtype=torch.long, device=q.device)
    where[placed] = torch.arange(placed.numel(), device=q.device)
    empty = where == placed.numel()
    where[empty] = placed.numel() + torch.arange(int(empty.sum()), device=q.device)
    out = out.index_select(1, where).reshape(B, H, nb * b, D)[:, :, :T]
    if key_padding_mask is not None:
        out = out * valid[:, None, :T, None]
    return out.to(q.dtype)
