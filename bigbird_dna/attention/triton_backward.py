"""Backward Triton kernels of block-sparse attention; see ``triton_kernels`` for the algorithm.

With P = exp(S - LSE) recomputed from the saved LSE and Delta = rowsum(O * dO):
    dV = P^T dO,   dS = P * (dO V^T - Delta),   dQ = scale * dS K,   dK = scale * dS^T Q.
dQ runs over the forward (kv) work plan, dK/dV over the transposed (q) plan. Items of a split row
or column accumulate into an fp32 buffer with atomics (order-dependent rounding, only there);
whole rows and columns store directly, so ordinary blocks are bitwise deterministic. One buffer
holds the dQ, dK and dV accumulators, zeroed once when allocated; one scatter launch copies all
three out and zeroes them again.

With ``ATOMIC_DQ`` (``KernelOptions.dq="atomic"``), the dK/dV kernel also adds ``dS K`` into an
fp32 ``[B, H, nb * BLOCK, D]`` buffer with atomics, and ``_bwd_dq_convert_kernel`` scales and
casts it into dQ (zeroing it again): five block products per (query block, key block) pair
instead of seven, since the dQ kernel no longer recomputes ``Q K^T`` and ``dO V^T``; dQ's last
bits then depend on the order of the atomics.
"""
import triton
import triton.language as tl

from bigbird_dna.attention.triton_forward import (
    LOG2E,
    _block_at,
    _item_coords,
    _item_span,
    _load_key_block,
    _load_tile,
    _store_tile,
    _token_valid,
)


@triton.jit
def _bwd_delta_kernel(
    O, DO, DELTA,
    stride_ob, stride_oh, stride_ot,
    stride_gb, stride_gh, stride_gt,
    seq_len, num_heads,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
):
    """Delta[b, h, t] = sum_d O * dO in fp32. Grid: (cdiv(T, BLOCK), B * H)."""
    bh = tl.program_id(1)
    b = (bh // num_heads).to(tl.int64)
    h = (bh % num_heads).to(tl.int64)
    offs_t = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    o = _load_tile(O + b * stride_ob + h * stride_oh, offs_t, stride_ot, seq_len, HEAD_DIM, EVEN_T)
    do = _load_tile(DO + b * stride_gb + h * stride_gh, offs_t, stride_gt, seq_len, HEAD_DIM, EVEN_T)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), 1)
    tl.store(DELTA + bh.to(tl.int64) * seq_len + offs_t, delta, mask=offs_t < seq_len)


@triton.jit
def _load_row_stats(LSE, DELTA, bh, offs_m, seq_len):
    """Base-2 LSE (+inf past the end, so P = 0 there) and Delta of query rows ``offs_m``."""
    in_seq = offs_m < seq_len
    lse2 = tl.load(LSE + bh * seq_len + offs_m, mask=in_seq, other=float("inf")) * LOG2E
    delta = tl.load(DELTA + bh * seq_len + offs_m, mask=in_seq, other=0.0)
    return lse2, delta


@triton.jit
def _accumulate_tile(ACC, slot, tile, BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr):
    offs = tl.arange(0, BLOCK)[:, None] * HEAD_DIM + tl.arange(0, HEAD_DIM)[None, :]
    tl.atomic_add(ACC + slot * BLOCK * HEAD_DIM + offs, tile, sem="relaxed")


@triton.jit
def _bwd_dq_kernel(
    Q, K, V, DO, LSE, DELTA, KPM, DQ, DQ_ACC,
    item_row, item_start, item_end, item_group, kv_idx,
    sm_scale, qk_scale,
    stride_qb, stride_qh, stride_qt,
    stride_kb, stride_kh, stride_kt,
    stride_vb, stride_vh, stride_vt,
    stride_gb, stride_gh, stride_gt,
    stride_dqb, stride_dqh, stride_dqt,
    seq_len, num_heads, num_blocks, num_batch, num_groups,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
    HAS_KPM: tl.constexpr, MASK_KEYS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    CHUNK: tl.constexpr, PRELOAD: tl.constexpr,
):
    """dQ of one query block over the key blocks ``kv_idx[start:end]``."""
    item, b, h, qblk = _item_coords(tl.program_id(0), item_row, num_batch, num_blocks)
    offs_m = qblk * BLOCK + tl.arange(0, BLOCK)
    arange_n = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD_DIM)
    q = _load_tile(Q + b * stride_qb + h * stride_qh, offs_m, stride_qt, seq_len, HEAD_DIM, EVEN_T)
    do = _load_tile(DO + b * stride_gb + h * stride_gh, offs_m, stride_gt, seq_len, HEAD_DIM, EVEN_T)
    lse2, delta = _load_row_stats(LSE, DELTA, b * num_heads + h, offs_m, seq_len)
    # Pointer tiles of key block 0, as in the forward kernel.
    k_tile = K + b * stride_kb + h * stride_kh + arange_n[:, None] * stride_kt + offs_d[None, :]
    v_tile = V + b * stride_vb + h * stride_vh + arange_n[:, None] * stride_vt + offs_d[None, :]
    kpm_row = KPM + b * seq_len

    dq = tl.zeros([BLOCK, HEAD_DIM], tl.float32)
    lo, hi, offs_c, blocks = _item_span(item, item_start, item_end, kv_idx, CHUNK, PRELOAD)
    for it in range(lo, hi):
        start_n = _block_at(kv_idx, it, lo, offs_c, blocks, PRELOAD) * BLOCK
        k, v, key_ok = _load_key_block(k_tile, v_tile, kpm_row, start_n, arange_n, seq_len, stride_kt, stride_vt,
                                       MASK_KEYS, HAS_KPM)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale
        if MASK_KEYS:
            s = tl.where(key_ok[None, :], s, float("-inf"))
        p = tl.math.exp2(s - lse2[:, None])
        dp = tl.dot(do, tl.trans(v), input_precision=DOT_PRECISION)
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(k.dtype), k, input_precision=DOT_PRECISION)
    dq *= sm_scale

    group = tl.load(item_group + item)
    if group < 0:
        _store_tile(DQ + b * stride_dqb + h * stride_dqh, offs_m, stride_dqt, seq_len, dq, HEAD_DIM, EVEN_T)
    else:
        _accumulate_tile(DQ_ACC, b * num_groups + group, dq, BLOCK, HEAD_DIM)


@triton.jit
def _bwd_dkdv_kernel(
    Q, K, V, DO, LSE, DELTA, KPM, DK, DV, DK_ACC, DV_ACC, DQ_ATOMIC,
    item_row, item_start, item_end, item_group, q_idx,
    sm_scale, qk_scale,
    stride_qb, stride_qh, stride_qt,
    stride_kb, stride_kh, stride_kt,
    stride_vb, stride_vh, stride_vt,
    stride_gb, stride_gh, stride_gt,
    stride_dkb, stride_dkh, stride_dkt,
    stride_dvb, stride_dvh, stride_dvt,
    seq_len, num_heads, num_blocks, num_batch, num_groups,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
    HAS_KPM: tl.constexpr, MASK_KEYS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    CHUNK: tl.constexpr, PRELOAD: tl.constexpr, ATOMIC_DQ: tl.constexpr,
):
    """dK, dV of one key block over the query blocks ``q_idx[start:end]`` (transposed table);
    with ``ATOMIC_DQ``, also each query block's unscaled ``dS K`` added into ``DQ_ATOMIC``.

    Works on transposed scores S^T [keys, queries].
    """
    item, b, h, kblk = _item_coords(tl.program_id(0), item_row, num_batch, num_blocks)
    offs_n = kblk * BLOCK + tl.arange(0, BLOCK)
    arange_m = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD_DIM)
    k = _load_tile(K + b * stride_kb + h * stride_kh, offs_n, stride_kt, seq_len, HEAD_DIM, EVEN_T)
    v = _load_tile(V + b * stride_vb + h * stride_vh, offs_n, stride_vt, seq_len, HEAD_DIM, EVEN_T)
    key_ok = _token_valid(KPM + b * seq_len, offs_n, seq_len, HAS_KPM)
    # Pointer tiles of query block 0; block i is at + i * BLOCK * stride_t.
    q_tile = Q + b * stride_qb + h * stride_qh + arange_m[:, None] * stride_qt + offs_d[None, :]
    do_tile = DO + b * stride_gb + h * stride_gh + arange_m[:, None] * stride_gt + offs_d[None, :]
    lse_row = LSE + (b * num_heads + h) * seq_len + arange_m
    delta_row = DELTA + (b * num_heads + h) * seq_len + arange_m
    # fp32 dQ rows of query block 0 of this (batch, head); the buffer has num_blocks * BLOCK rows.
    dqa_tile = (DQ_ATOMIC + (b * num_heads + h) * num_blocks * BLOCK * HEAD_DIM
                + arange_m[:, None] * HEAD_DIM + offs_d[None, :])

    dk = tl.zeros([BLOCK, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK, HEAD_DIM], tl.float32)
    lo, hi, offs_c, blocks = _item_span(item, item_start, item_end, q_idx, CHUNK, PRELOAD)
    for it in range(lo, hi):
        start_m = _block_at(q_idx, it, lo, offs_c, blocks, PRELOAD) * BLOCK
        if EVEN_T:
            q = tl.load(q_tile + start_m * stride_qt)
            do = tl.load(do_tile + start_m * stride_gt)
            lse2 = tl.load(lse_row + start_m) * LOG2E
            delta = tl.load(delta_row + start_m)
        else:
            # Rows past the end: LSE = +inf, so their P is 0.
            in_seq = arange_m < seq_len - start_m
            q = tl.load(q_tile + start_m * stride_qt, mask=in_seq[:, None], other=0.0)
            do = tl.load(do_tile + start_m * stride_gt, mask=in_seq[:, None], other=0.0)
            lse2 = tl.load(lse_row + start_m, mask=in_seq, other=float("inf")) * LOG2E
            delta = tl.load(delta_row + start_m, mask=in_seq, other=0.0)
        s_t = tl.dot(k, tl.trans(q), input_precision=DOT_PRECISION) * qk_scale  # [keys, queries]
        if MASK_KEYS:
            s_t = tl.where(key_ok[:, None], s_t, float("-inf"))
        p_t = tl.math.exp2(s_t - lse2[None, :])
        dv += tl.dot(p_t.to(do.dtype), do, input_precision=DOT_PRECISION)
        dp_t = tl.dot(v, tl.trans(do), input_precision=DOT_PRECISION)
        ds_t = p_t * (dp_t - delta[None, :])
        dk += tl.dot(ds_t.to(q.dtype), q, input_precision=DOT_PRECISION)
        if ATOMIC_DQ:
            dq_part = tl.dot(tl.trans(ds_t.to(k.dtype)), k, input_precision=DOT_PRECISION)  # [queries, D]
            tl.atomic_add(dqa_tile + start_m * HEAD_DIM, dq_part, sem="relaxed")
    dk *= sm_scale

    group = tl.load(item_group + item)
    if group < 0:
        _store_tile(DK + b * stride_dkb + h * stride_dkh, offs_n, stride_dkt, seq_len, dk, HEAD_DIM, EVEN_T)
        _store_tile(DV + b * stride_dvb + h * stride_dvh, offs_n, stride_dvt, seq_len, dv, HEAD_DIM, EVEN_T)
    else:
        slot = b * num_groups + group
        _accumulate_tile(DK_ACC, slot, dk, BLOCK, HEAD_DIM)
        _accumulate_tile(DV_ACC, slot, dv, BLOCK, HEAD_DIM)


@triton.jit
def _bwd_scatter_kernel(
    ACC, DQ, DK, DV, q_group_row, k_group_row,
    stride_dqb, stride_dqh, stride_dqt,
    stride_dkb, stride_dkh, stride_dkt,
    stride_dvb, stride_dvh, stride_dvt,
    seq_len, num_blocks, num_batch, num_q_groups, num_k_groups,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
):
    """Copy the fp32 accumulators of split rows (dQ) and columns (dK, dV) into the gradients.

    One launch for all three: ``ACC [B, Gq + 2 * Gk, BLOCK, HEAD_DIM]`` holds the dQ groups, then
    the dK groups, then the dV groups. Grid: ``((Gq + 2 * Gk) * B,)``.
    """
    pid = tl.program_id(0)
    g = pid // num_batch
    b = (pid % num_batch).to(tl.int64)
    if g < num_q_groups:
        row = tl.load(q_group_row + g)
        out = DQ + b * stride_dqb
        stride_h = stride_dqh
        stride_t = stride_dqt
    elif g < num_q_groups + num_k_groups:
        row = tl.load(k_group_row + g - num_q_groups)
        out = DK + b * stride_dkb
        stride_h = stride_dkh
        stride_t = stride_dkt
    else:
        row = tl.load(k_group_row + g - num_q_groups - num_k_groups)
        out = DV + b * stride_dvb
        stride_h = stride_dvh
        stride_t = stride_dvt
    arange = tl.arange(0, BLOCK)
    slot = b * (num_q_groups + 2 * num_k_groups) + g
    tile = _load_tile(ACC + slot * BLOCK * HEAD_DIM, arange, HEAD_DIM, BLOCK, HEAD_DIM, True)
    # Leave the slot zeroed for the next backward: the buffer is zeroed once, when allocated.
    _store_tile(ACC + slot * BLOCK * HEAD_DIM, arange, HEAD_DIM, BLOCK, tl.zeros([BLOCK, HEAD_DIM], tl.float32),
                HEAD_DIM, True)
    out += (row // num_blocks).to(tl.int64) * stride_h
    _store_tile(out, (row % num_blocks) * BLOCK + arange, stride_t, seq_len, tile, HEAD_DIM, EVEN_T)


@triton.jit
def _bwd_dq_convert_kernel(
    DQ_ATOMIC, DQ, sm_scale,
    stride_dqb, stride_dqh, stride_dqt,
    seq_len, num_heads, num_blocks,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
):
    """dQ = sm_scale * DQ_ATOMIC in dQ's dtype, and DQ_ATOMIC zeroed for the next backward.

    ``DQ_ATOMIC [B, H, num_blocks * BLOCK, D]`` fp32, contiguous. Grid: ``(num_blocks, B * H)``.
    """
    bh = tl.program_id(1)
    b = (bh // num_heads).to(tl.int64)
    h = (bh % num_heads).to(tl.int64)
    arange = tl.arange(0, BLOCK)
    rows = tl.program_id(0) * BLOCK + arange
    acc = DQ_ATOMIC + bh.to(tl.int64) * num_blocks * BLOCK * HEAD_DIM
    tile = _load_tile(acc, rows, HEAD_DIM, num_blocks * BLOCK, HEAD_DIM, True)
    _store_tile(acc, rows, HEAD_DIM, num_blocks * BLOCK, tl.zeros([BLOCK, HEAD_DIM], tl.float32), HEAD_DIM, True)
    _store_tile(DQ + b * stride_dqb + h * stride_dqh, rows, stride_dqt, seq_len, tile * sm_scale, HEAD_DIM, EVEN_T)
