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
  blocks are deterministic; split rows/columns may differ in the last bits between runs. With
  ``KernelOptions.dq="atomic"`` there is no dQ kernel: dK/dV adds ``dS K`` into an fp32 buffer
  with atomics, and a small kernel scales it into dQ (``triton_backward``).
- **Scheduling** (``triton_schedule``). The work lists are built with torch ops from the CSR
  pointers and cached per layout table for as long as it lives: the first call with a layout
  does one host sync (to size the grid); later calls do none and are CUDA-graph capturable. Split
  items run first, then whole rows head-major (``KernelOptions.order``); the chunk size follows
  the total work and the SM count (``KernelOptions.chunk_blocks=None``).
- **Launches** (``triton_launch``). Forward: the main kernel, plus the merge when rows are split
  (or, with ``KernelOptions.merge="fused"``, none: the last item of a split row merges it, counted
  by per-row arrival counters). Backward: Delta, dQ, dK/dV, plus one scatter for all split rows
  and columns. No fills: the counters and the split accumulators are scratch buffers kept per
  shape, zeroed once and re-zeroed by the kernels that consume them; after its first call a
  kernel is launched through its compiled binary, not ``JITFunction.run``.
- **Masking.** Only when needed (``T % b != 0`` or a ``key_padding_mask``) are scores masked per
  element. Padding keys are never attended. Padding query rows, and rows without any attendable key,
  output exactly 0; their LSE is stored as ``+inf`` so that they get zero gradient everywhere.
- **Launch options** (``triton_options``): how indices are read, the merge, the dQ path, warps
  and register caps; named ``VARIANTS``, of which ``DEFAULT_OPTIONS`` was measured fastest.

Supported: q, k, v ``[B, H, T, D]`` (any strides with unit stride on D, else copied), fp16, bf16 or
fp32 (fp32 dots in IEEE precision, no TF32); D in {16, 32, 64, 128}; ``layout.block_size`` in
{16, 32, 64, 128}; any T (the last partial block is masked); the layout must have H heads and
ceil(T/b) blocks.

Tested: triton 3.9.0 interpreter (``TRITON_INTERPRET=1``) with torch 2.13 on CPU, against the dense
fp64 reference for every layout preset, padding, partial blocks and split global rows, in fp32 and
fp16 (the interpreter cannot run bf16 dots), in both index modes; see
``tests/attention/test_triton_kernels.py``. The same tests pass with the triton 3.6.0 interpreter
and numpy 2.4 thanks to ``_fix_interpreter_index`` (a workaround, not a numpy pin). The kernels
compile, without a GPU, for sm_90 and sm_80 with triton 3.9.0 and 3.6.0 (the tests check 3.9,
shared memory and the pipelined waits). On an H100 (torch 2.11, triton 3.6) the compiled kernels
pass the same reference tests, bf16 included, and the ``gpu`` tests (``benchmarks/gpu_suite.sh``).

Limitations: no dropout, no attention bias, no causal masking beyond what the layout encodes; the
forward partials of split rows cost ``4 * (global blocks) / (6 * chunk_blocks)`` of the Q/K/V bytes
(about 2% for BigBird-ITC at 64K with chunks of 64); launch settings are fixed, not autotuned; fp32
with block 128 and D >= 64 is rejected on CUDA (shared memory); offsets within one (batch, head)
slice are int32, so ``T * stride_t < 2**31``; untested under ``torch.compile``; the work plans are
cached per process, so concurrent calls on several streams share them (read-only, which is safe).
"""
from __future__ import annotations

import functools
import math
from dataclasses import replace

import torch
import triton

from bigbird_dna.attention.conventions import check_attention_inputs
from bigbird_dna.attention.layout import BlockLayout
from bigbird_dna.attention.triton_backward import (
    _bwd_delta_kernel,
    _bwd_dkdv_kernel,
    _bwd_dq_convert_kernel,
    _bwd_dq_kernel,
    _bwd_scatter_kernel,
)
from bigbird_dna.attention.triton_forward import _attn_fwd_kernel, _attn_fwd_merge_kernel
from bigbird_dna.attention.triton_launch import KernelLauncher, scratch, scratch_guard
from bigbird_dna.attention.triton_options import (  # noqa: F401 - INDEX_MODES, MERGES: re-exported
    INDEX_MODES,
    MERGES,
    VARIANTS,
    KernelOptions,
    _dkdv_config,
    _launch_config,
)
from bigbird_dna.attention.triton_schedule import WorkPlan, auto_chunk_blocks, cached_work_plan
from bigbird_dna.errors import InputError

__all__ = ["KernelOptions", "VARIANTS", "triton_block_sparse_attention"]

SUPPORTED_BLOCK_SIZES = (16, 32, 64, 128)
SUPPORTED_HEAD_DIMS = (16, 32, 64, 128)
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
PROGRAMS_PER_SM = 4  # resident forward programs per SM (117-134 registers per thread at 4 warps, sm_90)
_LOG2E = 1.4426950408889634
DEFAULT_OPTIONS = VARIANTS["preload-fused"]  # measured fastest on an H100 (triton_options)


@functools.lru_cache(maxsize=None)
def _num_slots(device: torch.device) -> int:
    """Programs resident at once: SMs x PROGRAMS_PER_SM (as on an H100, 132 SMs, off CUDA)."""
    sms = torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132
    return sms * PROGRAMS_PER_SM


def _chunk_blocks(options: KernelOptions, layout: BlockLayout, batch: int) -> int:
    if options.chunk_blocks is not None:
        return options.chunk_blocks
    return auto_chunk_blocks(batch * layout.nnz, _num_slots(layout.device))


def _index_constants(plan: WorkPlan, options: KernelOptions) -> dict:
    preload = options.index_mode == "preload"
    return {"CHUNK": triton.next_power_of_2(max(plan.max_len, 1)) if preload else 1, "PRELOAD": preload}


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


_FWD, _FWD_MERGE = KernelLauncher(_attn_fwd_kernel), KernelLauncher(_attn_fwd_merge_kernel)
_BWD_DELTA, _BWD_DQ = KernelLauncher(_bwd_delta_kernel), KernelLauncher(_bwd_dq_kernel)
_BWD_DKDV, _BWD_SCATTER = KernelLauncher(_bwd_dkdv_kernel), KernelLauncher(_bwd_scatter_kernel)
_BWD_DQ_CONVERT = KernelLauncher(_bwd_dq_convert_kernel)


def _forward(q, k, v, layout: BlockLayout, kpm, scale: float, options: KernelOptions):
    B, H, T, D = q.shape
    bs, dev, f32 = layout.block_size, q.device, torch.float32
    plan = cached_work_plan(layout.kv_ptr, _chunk_blocks(options, layout, B), options.order)
    o = torch.empty_like(q)
    lse = torch.empty(B, H, T, device=dev, dtype=f32)
    o_part = scratch("fwd_o_part", (B, plan.num_parts, bs, D), f32, dev)
    lse_part = scratch("fwd_lse_part", (B, plan.num_parts, bs), f32, dev)
    consts = _kernel_constants(q, layout, kpm)
    fused = options.merge == "fused" and plan.num_groups > 0
    # Arrival counters of the split rows, zero between launches (the kernel resets them); unused
    # (any int32 tensor) without the fused merge.
    counter = scratch("fwd_counter", (B * plan.num_groups,), torch.int32, dev, zero=True) if fused else plan.item_part
    with scratch_guard():
        _FWD((plan.num_items * B,),
             q, k, v, o, lse, q if kpm is None else kpm, o_part, lse_part, counter,
             plan.item_row, plan.item_start, plan.item_end, plan.item_part, plan.item_group, plan.group_first_part,
             plan.group_num_parts, layout.kv_idx,
             scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(o),
             T, H, layout.num_q_blocks, B, plan.num_parts, plan.num_groups,
             **consts, **_index_constants(plan, options), FUSED_MERGE=fused,
             **_launch_config(bs, D, q.element_size(), backward=False))
        if plan.num_groups and not fused:
            _FWD_MERGE((plan.num_groups * B,),
                       o, lse, o_part, lse_part, plan.group_row, plan.group_first_part, plan.group_num_parts,
                       *_strides(o), T, H, layout.num_q_blocks, B, plan.num_parts,
                       BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"])
    return o, lse


def _backward(do, q, k, v, o, lse, layout: BlockLayout, kpm, scale: float, options: KernelOptions):
    B, H, T, D = q.shape
    bs, nb, dev, f32 = layout.block_size, layout.num_q_blocks, q.device, torch.float32
    consts = _kernel_constants(q, layout, kpm)
    config = _launch_config(bs, D, q.element_size(), backward=True)
    kpm_arg = q if kpm is None else kpm
    chunk = _chunk_blocks(options, layout, B)
    atomic_dq = options.dq == "atomic"
    kv_plan = None if atomic_dq else cached_work_plan(layout.kv_ptr, chunk, options.order)
    q_plan = cached_work_plan(layout.q_ptr, chunk, options.order)
    gq, gk = (0 if atomic_dq else kv_plan.num_groups), q_plan.num_groups
    # Every allocation before the first launch: the accumulators of the split rows' dQ and the
    # split columns' dK and dV (and the atomic dQ buffer) are zero between calls because the
    # scatter (convert) launch re-zeroes them.
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    delta = scratch("bwd_delta", (B, H, T), f32, dev)
    acc = scratch("bwd_acc", (B, gq + 2 * gk, bs, D), f32, dev, zero=True)
    dq_atomic = scratch("bwd_dq_atomic", (B, H, nb * bs, D), f32, dev, zero=True) if atomic_dq else acc
    with scratch_guard():
        _BWD_DELTA((triton.cdiv(T, bs), B * H),
                   o, do, delta, *_strides(o), *_strides(do), T, H, BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"])
        if not atomic_dq:
            _BWD_DQ((kv_plan.num_items * B,),
                    q, k, v, do, lse, delta, kpm_arg, dq, acc,
                    kv_plan.item_row, kv_plan.item_start, kv_plan.item_end, kv_plan.item_group, layout.kv_idx,
                    scale, scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(do), *_strides(dq),
                    T, H, nb, B, gq + 2 * gk, **consts, **_index_constants(kv_plan, options), **config)
        _BWD_DKDV((q_plan.num_items * B,),
                  q, k, v, do, lse, delta, kpm_arg, dk, dv, acc[:, gq:], acc[:, gq + gk:], dq_atomic,
                  q_plan.item_row, q_plan.item_start, q_plan.item_end, q_plan.item_group, layout.q_idx,
                  scale, scale * _LOG2E, *_strides(q), *_strides(k), *_strides(v), *_strides(do),
                  *_strides(dk), *_strides(dv), T, H, nb, B, gq + 2 * gk,
                  **consts, **_index_constants(q_plan, options), ATOMIC_DQ=atomic_dq, **_dkdv_config(config, options))
        if atomic_dq:
            _BWD_DQ_CONVERT((nb, B * H), dq_atomic, dq, scale, *_strides(dq), T, H, nb,
                            BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"])
        if gq + gk:
            q_group_row = q_plan.group_row if atomic_dq else kv_plan.group_row  # unread when gq == 0
            _BWD_SCATTER(((gq + 2 * gk) * B,),
                         acc, dq, dk, dv, q_group_row, q_plan.group_row, *_strides(dq), *_strides(dk),
                         *_strides(dv), T, nb, B, gq, gk, BLOCK=bs, HEAD_DIM=D, EVEN_T=consts["EVEN_T"])
    return dq, dk, dv


class _BlockSparseAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, layout, kpm, scale, options):
        o, lse = _forward(q, k, v, layout, kpm, scale, options)
        ctx.save_for_backward(q, k, v, o, lse, kpm)
        ctx.layout, ctx.scale, ctx.options = layout, scale, options
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse, kpm = ctx.saved_tensors
        dq, dk, dv = _backward(_unit_stride(do), q, k, v, o, lse, ctx.layout, kpm, ctx.scale, ctx.options)
        return dq, dk, dv, None, None, None, None


def triton_block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                                  key_padding_mask: torch.Tensor | None = None, scale: float | None = None,
                                  *, chunk_blocks: int | None = None,
                                  options: KernelOptions | str | None = None) -> torch.Tensor:
    """Block-sparse attention of ``q, k, v [B, H, T, D]`` over ``layout``, differentiable.

    Args:
        q, k, v: CUDA tensors (or CPU tensors with ``TRITON_INTERPRET=1`` set before Triton was
            imported), one dtype among fp16, bf16, fp32.
        layout: :class:`BlockLayout` with ``H`` heads and ``ceil(T / block_size)`` blocks, on q's device.
        key_padding_mask: optional bool ``[B, T]``, True = real token.
        scale: score multiplier, default ``1/sqrt(D)``.
        chunk_blocks: most key (query) blocks one program handles for a row (column); longer
            rows and columns are split and merged. Overrides ``options.chunk_blocks``.
        options: :class:`KernelOptions`, or the name of one of :data:`VARIANTS`; default
            ``DEFAULT_OPTIONS``.

    Returns:
        ``[B, H, T, D]`` in q's dtype (and q's memory layout).

    After the first call with a layout (and chunk size), a call does no host sync: its work plans
    are cached, so forward and backward can be captured in a CUDA graph.
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
    if isinstance(options, str):
        if options not in VARIANTS:
            raise InputError(f"unknown kernel variant {options!r}; choose one of {sorted(VARIANTS)}")
        options = VARIANTS[options]
    options = options or DEFAULT_OPTIONS
    if chunk_blocks is not None:
        options = replace(options, chunk_blocks=chunk_blocks)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    kpm = None if key_padding_mask is None else key_padding_mask.contiguous().view(torch.uint8)
    q, k, v = (_unit_stride(x) for x in (q, k, v))
    return _BlockSparseAttention.apply(q, k, v, layout, kpm, scale, options)
