"""Forward Triton kernels of block-sparse attention; see ``triton_kernels`` for the algorithm.

Conventions shared with ``triton_backward``:
- one program per (work item, batch): ``pid = item * B + b``, so the longest-first order of the
  work items holds across the batch and the programs in flight cover few heads (L2 reuse of the
  window and global K/V blocks);
- tensors are addressed as ``base + b*stride_b + h*stride_h + t*stride_t + d`` (unit stride on D);
  LSE and Delta are contiguous [B, H, T] fp32;
- scores are kept in base 2: ``s = (q . k) * scale * log2(e)``; the saved LSE is in natural log,
  ``+inf`` for dead rows (padding queries, rows with no attendable key), which makes every
  probability of a dead row exactly 0 in the backward pass.
"""
import triton
import triton.language as tl

LN2 = tl.constexpr(0.6931471805599453)
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def _item_coords(pid, item_row, num_batch, num_blocks):
    """Decode a program id into (item, batch, head, block) via the item's CSR row ``h*nb + i``; batch
    and head as int64, since they scale the strides of large tensors."""
    item = pid // num_batch
    row = tl.load(item_row + item)
    return item, (pid % num_batch).to(tl.int64), (row // num_blocks).to(tl.int64), row % num_blocks


@triton.jit
def _item_span(item, item_start, item_end, idx, CHUNK: tl.constexpr, PRELOAD: tl.constexpr):
    """The item's CSR span ``[lo, hi)`` of ``idx`` and, with ``PRELOAD``, its block indices.

    Preloading the (at most ``CHUNK``, a power of 2) indices into registers before the loop lets
    the compiler pipeline the K/V loads: with ``tl.load(idx + it)`` inside the loop, the loads of
    one iteration wait on that iteration's index load and nothing is prefetched.
    """
    lo = tl.load(item_start + item)
    hi = tl.load(item_end + item)
    offs = tl.arange(0, CHUNK)
    if PRELOAD:
        blocks = tl.load(idx + lo + offs, mask=offs < hi - lo, other=0)
    else:
        blocks = tl.zeros([CHUNK], tl.int32)
    return lo, hi, offs, blocks


@triton.jit
def _block_at(idx, it, lo, offs, blocks, PRELOAD: tl.constexpr):
    """Block index ``idx[it]``: selected from the preloaded ``blocks``, or loaded."""
    if PRELOAD:
        blk = tl.sum(tl.where(offs == it - lo, blocks, 0))
    else:
        blk = tl.load(idx + it)
    return blk


@triton.jit
def _load_tile(base, offs_t, stride_t, seq_len, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr):
    """Load rows ``offs_t`` of a [T, HEAD_DIM] slice; rows past ``seq_len`` read as 0."""
    ptrs = base + offs_t[:, None] * stride_t + tl.arange(0, HEAD_DIM)[None, :]
    if EVEN_T:
        tile = tl.load(ptrs)
    else:
        tile = tl.load(ptrs, mask=(offs_t < seq_len)[:, None], other=0.0)
    return tile


@triton.jit
def _store_tile(base, offs_t, stride_t, seq_len, tile, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr):
    ptrs = base + offs_t[:, None] * stride_t + tl.arange(0, HEAD_DIM)[None, :]
    if EVEN_T:
        tl.store(ptrs, tile.to(base.dtype.element_ty))
    else:
        tl.store(ptrs, tile.to(base.dtype.element_ty), mask=(offs_t < seq_len)[:, None])


@triton.jit
def _token_valid(kpm_row, offs_t, seq_len, HAS_KPM: tl.constexpr):
    """True for real tokens: inside the sequence and, with a padding mask, marked real."""
    valid = offs_t < seq_len
    if HAS_KPM:
        valid = valid & (tl.load(kpm_row + offs_t, mask=valid, other=0) != 0)
    return valid


@triton.jit
def _load_key_block(k_tile, v_tile, kpm_row, start_n, arange_n, seq_len, stride_kt, stride_vt,
                    MASK_KEYS: tl.constexpr, HAS_KPM: tl.constexpr):
    """``(k, v, key_ok)``: the key and value tiles ``[BLOCK, HEAD_DIM]`` of the key block that starts
    at token ``start_n`` (zeros past the sequence end or at padding keys when ``MASK_KEYS``), and
    which of its keys are real ``[BLOCK]`` (read only when ``MASK_KEYS``)."""
    key_ok = _token_valid(kpm_row + start_n, arange_n, seq_len - start_n, HAS_KPM)
    if MASK_KEYS:
        k = tl.load(k_tile + start_n * stride_kt, mask=key_ok[:, None], other=0.0)
        v = tl.load(v_tile + start_n * stride_vt, mask=key_ok[:, None], other=0.0)
    else:
        k = tl.load(k_tile + start_n * stride_kt)
        v = tl.load(v_tile + start_n * stride_vt)
    return k, v, key_ok


@triton.jit
def _attn_fwd_kernel(
    Q, K, V, O, LSE, KPM, O_PART, LSE_PART, COUNTER,
    item_row, item_start, item_end, item_part, item_group, group_first_part, group_num_parts, kv_idx,
    qk_scale,
    stride_qb, stride_qh, stride_qt,
    stride_kb, stride_kh, stride_kt,
    stride_vb, stride_vh, stride_vt,
    stride_ob, stride_oh, stride_ot,
    seq_len, num_heads, num_blocks, num_batch, num_parts, num_groups,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
    HAS_KPM: tl.constexpr, MASK_KEYS: tl.constexpr, DOT_PRECISION: tl.constexpr,
    CHUNK: tl.constexpr, PRELOAD: tl.constexpr, FUSED_MERGE: tl.constexpr,
):
    """One query block against the key blocks ``kv_idx[start:end]``: online softmax.

    An item of a split row writes its fp32 partial. With ``FUSED_MERGE`` the item that finishes a
    row last (a per-row arrival counter, ``COUNTER [B * G]`` int32, zeroed before the launch) merges
    the row's partials itself and sets the counter back to 0 (it is zeroed once, when allocated);
    otherwise ``_attn_fwd_merge_kernel`` does it in a second launch.
    """
    item, b, h, qblk = _item_coords(tl.program_id(0), item_row, num_batch, num_blocks)
    offs_m = qblk * BLOCK + tl.arange(0, BLOCK)
    arange_n = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD_DIM)
    q = _load_tile(Q + b * stride_qb + h * stride_qh, offs_m, stride_qt, seq_len, HEAD_DIM, EVEN_T)
    # Pointer tiles of key block 0; block j is at + j * BLOCK * stride_t (int32: T * stride_t < 2**31).
    k_tile = K + b * stride_kb + h * stride_kh + arange_n[:, None] * stride_kt + offs_d[None, :]
    v_tile = V + b * stride_vb + h * stride_vh + arange_n[:, None] * stride_vt + offs_d[None, :]
    kpm_row = KPM + b * seq_len

    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    acc = tl.zeros([BLOCK, HEAD_DIM], tl.float32)
    lo, hi, offs_c, blocks = _item_span(item, item_start, item_end, kv_idx, CHUNK, PRELOAD)
    for it in range(lo, hi):
        start_n = _block_at(kv_idx, it, lo, offs_c, blocks, PRELOAD) * BLOCK
        k, v, key_ok = _load_key_block(k_tile, v_tile, kpm_row, start_n, arange_n, seq_len, stride_kt, stride_vt,
                                       MASK_KEYS, HAS_KPM)
        s = tl.dot(q, tl.trans(k), input_precision=DOT_PRECISION) * qk_scale  # [BLOCK, BLOCK]
        if MASK_KEYS:
            s = tl.where(key_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_ref = m_new
        if MASK_KEYS:
            # A row that has seen only masked keys keeps m = -inf; shift by 0 to avoid inf - inf.
            m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.math.exp2(s - m_ref[:, None])
        alpha = tl.math.exp2(m_i - m_ref)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=DOT_PRECISION)
        m_i = m_new

    row_ok = (l_i > 0) & _token_valid(kpm_row, offs_m, seq_len, HAS_KPM)
    l_safe = tl.where(row_ok, l_i, 1.0)
    out = tl.where(row_ok[:, None], acc / l_safe[:, None], 0.0)
    lse2 = tl.where(row_ok, m_i + tl.math.log2(l_safe), float("-inf"))
    part = tl.load(item_part + item)
    if part < 0:
        _store_tile(O + b * stride_ob + h * stride_oh, offs_m, stride_ot, seq_len, out, HEAD_DIM, EVEN_T)
        lse = tl.where(row_ok, lse2 * LN2, float("inf"))
        tl.store(LSE + (b * num_heads + h) * seq_len + offs_m, lse, mask=offs_m < seq_len)
    else:
        slot = b * num_parts + part
        arange_m = tl.arange(0, BLOCK)
        _store_tile(O_PART + slot * BLOCK * HEAD_DIM, arange_m, HEAD_DIM, BLOCK, out, HEAD_DIM, True)
        tl.store(LSE_PART + slot * BLOCK + arange_m, lse2)
        if FUSED_MERGE:
            group = tl.load(item_group + item)
            count = tl.load(group_num_parts + group)
            tl.debug_barrier()  # every thread's partial is written before the release below
            arrived = tl.atomic_add(COUNTER + b * num_groups + group, 1, sem="acq_rel")
            if arrived == count - 1:
                first = b * num_parts + tl.load(group_first_part + group)
                _merge_parts(O + b * stride_ob + h * stride_oh, LSE + (b * num_heads + h) * seq_len, O_PART,
                             LSE_PART, first, count, qblk, stride_ot, seq_len, BLOCK, HEAD_DIM, EVEN_T)
                tl.store(COUNTER + b * num_groups + group, 0)  # ready for the next launch: no zero fill


@triton.jit
def _merge_parts(o_base, lse_row, O_PART, LSE_PART, first, count, qblk, stride_ot, seq_len,
                 BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr):
    """Combine partial slots ``first .. first + count - 1`` of query block ``qblk`` by their
    log-sum-exp (base 2) into its output rows and LSE. Partials are read past L1 (``.cg``): other
    programs wrote them."""
    arange_m = tl.arange(0, BLOCK)
    offs_d = tl.arange(0, HEAD_DIM)
    m_i = tl.full([BLOCK], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK], tl.float32)
    acc = tl.zeros([BLOCK, HEAD_DIM], tl.float32)
    for slot in range(first, first + count):
        lse_part = tl.load(LSE_PART + slot * BLOCK + arange_m, cache_modifier=".cg")
        o_part = tl.load(O_PART + slot * BLOCK * HEAD_DIM + arange_m[:, None] * HEAD_DIM + offs_d[None, :],
                         cache_modifier=".cg")
        m_new = tl.maximum(m_i, lse_part)
        m_ref = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_ref)
        weight = tl.math.exp2(lse_part - m_ref)
        l_i = l_i * alpha + weight
        acc = acc * alpha[:, None] + weight[:, None] * o_part
        m_i = m_new

    offs_m = qblk * BLOCK + arange_m
    row_ok = l_i > 0
    l_safe = tl.where(row_ok, l_i, 1.0)
    out = tl.where(row_ok[:, None], acc / l_safe[:, None], 0.0)
    _store_tile(o_base, offs_m, stride_ot, seq_len, out, HEAD_DIM, EVEN_T)
    lse = tl.where(row_ok, (m_i + tl.math.log2(l_safe)) * LN2, float("inf"))
    tl.store(lse_row + offs_m, lse, mask=offs_m < seq_len)


@triton.jit
def _attn_fwd_merge_kernel(
    O, LSE, O_PART, LSE_PART,
    group_row, group_first_part, group_num_parts,
    stride_ob, stride_oh, stride_ot,
    seq_len, num_heads, num_blocks, num_batch, num_parts,
    BLOCK: tl.constexpr, HEAD_DIM: tl.constexpr, EVEN_T: tl.constexpr,
):
    """Combine the chunk results of one split query block (grid: ``(G * B,)``)."""
    g, b, h, qblk = _item_coords(tl.program_id(0), group_row, num_batch, num_blocks)
    first = b * num_parts + tl.load(group_first_part + g)
    _merge_parts(O + b * stride_ob + h * stride_oh, LSE + (b * num_heads + h) * seq_len, O_PART, LSE_PART,
                 first, tl.load(group_num_parts + g), qblk, stride_ot, seq_len, BLOCK, HEAD_DIM, EVEN_T)
