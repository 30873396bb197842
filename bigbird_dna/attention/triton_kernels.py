"""Fused block-sparse attention in Triton (forward and backward) for any :class:`BlockLayout`.

Algorithm (FlashAttention-2 over a block graph):

- **Forward** (``triton_forward._attn_fwd_kernel``). One program per (work item, batch). A work item
  is a query block with a run of at most ``chunk_blocks`` of its key blocks (CSR row of
  ``layout.kv_ptr/kv_idx``). The program streams those K/V blocks with an online softmax in base 2
  (``scale * log2(e)`` folded into the scores) and fp32 accumulators. Rows longer than
  ``chunk_blocks`` (BigBird's global query blocks, which see all T/b blocks) are split into several
  items that write fp32 partial outputs plus their log-sum-exp; ``_attn_fwd_merge_kernel`` then
  combines them (flash-decoding). The log-sum-exp ``LSE [B, H, T]`` fp32 is saved for the backward.
- **Backward** (``triton_backward``). ``Delta = rowsum(O * dO)`` first; then dQ over the same
  forward work list and dK/dV over the transposed table (``layout.q_ptr/q_idx``), with P recomputed
  from the LSE. Long transposed columns (the global key blocks, seen by every query block) are split
  like the forward rows; their items add into an fp32 buffer with ``tl.atomic_add`` that is copied
  into dK/dV at the end (same for split dQ rows). Everything else is stored directly, so ordinary
  blocks are deterministic; split rows/columns may differ in the last bits between runs.
- **Scheduling** (``triton_schedule``). The work lists are built with torch ops from the CSR
  pointers, sorted longest-first, and cached per layout table: the first call with a layout does
  one host sync (to size the grid); later calls do none and are CUDA-graph capturable.
- **Masking.** Only when needed (``T % b != 0`` or a ``key_padding_mask``) are scores masked per
  element. Padding keys are never attended. Padding query rows, and rows without any attendable key,
  output exactly 0; their LSE is stored as ``+inf`` so that they get zero gradient everywhere.

Supported: q, k, v ``[B, H, T, D]`` (any strides with unit stride on D, else copied), fp16, bf16 or
fp32 (fp32 dots in IEEE precision, no TF32); D in {16, 32, 64, 128}; ``layout.block_size`` in
{16, 32, 64, 128}; any T (the last partial block is masked); the layout must have H heads and
ceil(T/b) blocks.

Tested: triton 3.9.0 interpreter (``TRITON_INTERPRET=1``) with torch 2.13 on CPU, against the dense
fp64 reference for every layout preset, padding, partial blocks and split global rows, in fp32 and
fp16 (the interpreter cannot run bf16 dots); see ``tests/attention/test_triton_kernels.py``. The
kernels also compile, without a GPU, for sm_90 and sm_80 with triton 3.9.0 and 3.6.0 (the tests
check 3.9 and shared memory). **Not yet run on a GPU**: numerics of the compiled kernels (bf16
included), the launch settings (``_launch_config``) and performance are unverified; the ``gpu``
tests and ``benchmarks/attention.py`` are written for that.

Limitations: no dropout, no attention bias, no causal masking beyond what the layout encodes; the
forward partials of split rows cost ``4 * (global blocks) / (6 * chunk_blocks)`` of the Q/K/V bytes
(about 4% for BigBird-ITC at the default 32); launch settings are fixed, not autotuned; fp32 with
block 128 and D >= 64 is rejected on CUDA (shared memory); offsets within one (batch, head) slice are
int32, so ``T * stride_t < 2**31``; untested under ``torch.compile``.
"""
from __future__ import annotations

import math

import torch
import triton

from bigbird_dna.attention.layout import BlockLayout
from bigbird_dna.attention.conventions import check_attention_inputs
from bigbird_dna.attention.triton_backward import (
    _bwd_delta_kernel,
    _bwd_dkdv_kernel,
    _bwd_dq_kernel,
    _bwd_scatter_kernel,
)
from bigbird_dna.attention.triton_forward import _attn_fwd_kernel, _attn_fwd_merge_kernel
from bigbird_dna.attention.triton_schedule import WorkPlan, cached_work_plan
from bigbird_dna.errors import InputError

__all__ = ["triton_block_sparse_attention"]

SUPPORTED_BLOCK_SIZES = (16, 32, 64, 128)
SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
DEFAULT_CHUNK_BLOCKS = 32
_LOG2E = 1.4426950408889634


def _launch_config(block: int, head_dim: int, elem_size: int, backward: bool) -> dict:
    """num_warps / num_stages: untuned first guesses, ignored by the interpreter.

    Fewer pipeline stages for bigger tiles keep shared memory within an A100's 163 KiB (160 KiB at
    block 128 x D 128 in half precision; the tests compile the kernels and check).
    """
    tile_kib = block * head_dim * elem_size // 1024
    stages = (3 if tile_kib <= 8 else 2 if tile_kib <= 16 else 1) if backward else (3 if tile_kib <= 16 else 2)
    return {"num_warps": 4 if block * head_dim <= 64 * 64 else 8, "num_stages": stages}


def _unit_stride(x: torch.Tensor) -> torch.Tensor:
    return x if x.stride(-1) == 1 else x.contiguous()


def _strides(x: torch.Tensor) -> tuple[int, int, int]:
    """Batch, head and token strides of a ``[B, H, T, D]`` tensor with unit stride on D."""
    return x.stride(0), x.stride(1), x.stride(2)


def _kernel_constants(q: torch.Tensor, layout: BlockLayout, key_padding_mask) -> dict:
    return {
        "BLOCK": layout.block_size,
        "HEAD_DIM": q.shape[-1],
        "EVEN_T": q.shape[2] % layout.block_size == 0,
        "HAS_KPM": key_padding_mask is not None,
        "MASK_KEYS": key_padding_mask is not None or q.shape[2] % layout.block_size != 0,
        "DOT_PRECISION": "ieee" if q.dtype == torch.float32 else None,  # None: the backend default
    }


def _scatter(acc: torch.Tensor, out: torch.Tensor, plan: WorkPlan, layout: BlockLayout) -> None:
    """Copy the fp32 accumulators ``acc [B, G, b, D]`` of split rows/columns into ``out``."""
    if plan.num_groups == 0:
        return
    B, _, T, D = out.shape
    _bwd_scatter_kernel[(plan.num_groups * B,)](
        acc, out, plan.group_row, *_strides(out), T, layout.num_q_blocks, B, plan.num_groups,
        BLOCK=layout.block_size, HEAD_DIM=D, EVEN_T=T % layout.block_size == 0,
    )


def _forward(q, k, v, layout: BlockLayout, kpm, scale: float, chunk_blocks: int):
    B, H, T, D = q.shape
    bs = layout.block_size
    plan = cached_work_plan(layout.kv_ptr, chunk_blocks)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
    o_part = torch.empty(B, plan.num_parts, bs, D, device=q.device, dtype=torch.float32)
    lse_part = torch.empty(B, plan.num_parts, bs, device=q.device, dtype=torch.float32)
    consts = _kernel_constants(q, layout, kpm)
    _attn_fwd_kernel[(plan.num_items * B,)](
        q, k, v, o, lse, q if kpm is None else kpm, o_part, lse_part,
        plan.item_row, plan.item_start, plan.item_end, plan.item_part, layout.kv_idx,
        scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(o),
        T, H, layout.num_q_blocks, B, plan.num_parts,
        **consts, **_launch_config(bs, D, q.element_size(), backward=False),
    )
    if plan.num_groups:
        _attn_fwd_merge_kernel[(plan.num_groups * B,)](
            o, lse, o_part, lse_part, plan.group_row, plan.group_first_part, plan.group_num_parts,
            *_strides(o), T, H, layout.num_q_blocks, B, plan.num_parts,
            BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"],
        )
    return o, lse


def _backward(do, q, k, v, o, lse, layout: BlockLayout, kpm, scale: float, chunk_blocks: int):
    B, H, T, D = q.shape
    bs, nb = layout.block_size, layout.num_q_blocks
    consts = _kernel_constants(q, layout, kpm)
    config = _launch_config(bs, D, q.element_size(), backward=True)
    kpm_arg = q if kpm is None else kpm
    delta = torch.empty(B, H, T, device=q.device, dtype=torch.float32)
    _bwd_delta_kernel[(triton.cdiv(T, bs), B * H)](
        o, do, delta, *_strides(o), *_strides(do), T, H, BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"],
    )

    kv_plan = cached_work_plan(layout.kv_ptr, chunk_blocks)
    dq = torch.empty_like(q)
    dq_acc = torch.zeros(B, kv_plan.num_groups, bs, D, device=q.device, dtype=torch.float32)
    _bwd_dq_kernel[(kv_plan.num_items * B,)](
        q, k, v, do, lse, delta, kpm_arg, dq, dq_acc,
        kv_plan.item_row, kv_plan.item_start, kv_plan.item_end, kv_plan.item_group, layout.kv_idx,
        scale, scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(do), *_strides(dq),
        T, H, nb, B, kv_plan.num_groups, **consts, **config,
    )
    _scatter(dq_acc, dq, kv_plan, layout)

    q_plan = cached_work_plan(layout.q_ptr, chunk_blocks)
    dk, dv = torch.empty_like(k), torch.empty_like(v)
    dk_acc = torch.zeros(B, q_plan.num_groups, bs, D, device=q.device, dtype=torch.float32)
    dv_acc = torch.zeros_like(dk_acc)
    _bwd_dkdv_kernel[(q_plan.num_items * B,)](
        q, k, v, do, lse, delta, kpm_arg, dk, dv, dk_acc, dv_acc,
        q_plan.item_row, q_plan.item_start, q_plan.item_end, q_plan.item_group, layout.q_idx,
        scale, scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(do),
        *_strides(dk), *_strides(dv), T, H, nb, B, q_plan.num_groups, **consts, **config,
    )
    _scatter(dk_acc, dk, q_plan, layout)
    _scatter(dv_acc, dv, q_plan, layout)
    return dq, dk, dv


class _BlockSparseAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, layout, kpm, scale, chunk_blocks):
        o, lse = _forward(q, k, v, layout, kpm, scale, chunk_blocks)
        ctx.save_for_backward(q, k, v, o, lse, kpm)
        ctx.layout, ctx.scale, ctx.chunk_blocks = layout, scale, chunk_blocks
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse, kpm = ctx.saved_tensors
        dq, dk, dv = _backward(_unit_stride(do), q, k, v, o, lse, ctx.layout, kpm, ctx.scale, ctx.chunk_blocks)
        return dq, dk, dv, None, None, None, None


def triton_block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                                  key_padding_mask: torch.Tensor | None = None, scale: float | None = None,
                                  *, chunk_blocks: int = DEFAULT_CHUNK_BLOCKS) -> torch.Tensor:
    """Block-sparse attention of ``q, k, v [B, H, T, D]`` over ``layout``, differentiable.

    Args:
        q, k, v: CUDA tensors (or CPU tensors with ``TRITON_INTERPRET=1`` set before Triton was
            imported), one dtype among fp16, bf16, fp32.
        layout: :class:`BlockLayout` with ``H`` heads and ``ceil(T / block_size)`` blocks, on q's device.
        key_padding_mask: optional bool ``[B, T]``, True = real token.
        scale: score multiplier, default ``1/sqrt(D)``.
        chunk_blocks: most key (query) blocks one program handles for a row (column); longer
            rows and columns are split and merged.

    Returns:
        ``[B, H, T, D]`` in q's dtype (and q's memory layout).
    """
    check_attention_inputs(q, k, v, layout, key_padding_mask)
    if q.dtype not in SUPPORTED_DTYPES:
        raise InputError(f"triton attention supports {SUPPORTED_DTYPES}, got {q.dtype}")
    if q.shape[-1] not in SUPPORTED_HEAD_DIMS:
        raise InputError(f"triton attention supports head_dim in {SUPPORTED_HEAD_DIMS}, got {q.shape[-1]}")
    if layout.block_size not in SUPPORTED_BLOCK_SIZES:
        raise InputError(f"triton attention supports block_size in {SUPPORTED_BLOCK_SIZES}, "
                         f"got {layout.block_size}")
    if q.is_cuda and q.dtype == torch.float32 and layout.block_size == 128 and q.shape[-1] >= 64:
        raise InputError("fp32 with block_size 128 and head_dim >= 64 needs more shared memory than an A100 "
                         "has; use bf16/fp16 or block_size <= 64")
    if chunk_blocks < 1:
        raise InputError(f"chunk_blocks must be >= 1, got {chunk_blocks}")
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    kpm = None if key_padding_mask is None else key_padding_mask.contiguous().view(torch.uint8)
    q, k, v = (_unit_stride(x) for x in (q, k, v))
    return _BlockSparseAttention.apply(q, k, v, layout, kpm, scale, chunk_blocks)
