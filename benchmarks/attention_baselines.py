"""The attention methods ``benchmarks/attention.py`` compares ours with, in the same run.

- FlexAttention on the same block graph, twice: a BlockMask of the layout's own blocks (all full,
  no mask_mod, 64-wide tiles), and one of 128-token blocks (partial ones with a mask_mod: the
  tiles FlexAttention picks itself on sm_90);
- dense ``scaled_dot_product_attention`` per backend (the backend is part of the method name);
- HF transformers ``BigBirdBlockSparseAttention`` at T=4096 with identity projections.

Each ``run_*`` adds its rows to a ``Recorder`` (see ``attention.py``), or a skipped row with the
reason. Shapes: q, k, v ``[B, H, T, D]``.
"""
from __future__ import annotations

import contextlib

import torch

from benchmarks.harness import is_gpu, relative_error, wall_s


def block_table(layout) -> torch.Tensor:
    """``[H, nq, nk]`` bool: True where the layout attends from query block to key block."""
    H, nq, nk = layout.num_heads, layout.num_q_blocks, layout.num_k_blocks
    lengths = (layout.kv_ptr[1:] - layout.kv_ptr[:-1]).long()
    rows = torch.repeat_interleave(torch.arange(H * nq, device=lengths.device), lengths)
    table = torch.zeros(H * nq, nk, dtype=torch.bool, device=lengths.device)
    table[rows, layout.kv_idx[:layout.nnz].long()] = True
    return table.view(H, nq, nk)


def _kv_blocks(selected: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``[H, NQ, NK]`` bool -> (counts ``[1, H, NQ]``, indices ``[1, H, NQ, NK]``, selected first)."""
    order = torch.argsort((~selected).to(torch.uint8), dim=-1, stable=True)
    return selected.sum(-1).to(torch.int32)[None], order.to(torch.int32)[None]


def flex_block_mask(layout, seq: int, coarsen: int = 1):
    """FlexAttention BlockMask of the layout.

    ``coarsen=1``: the layout's own blocks, all full, no mask_mod. ``coarsen=c``: blocks of
    ``c * block_size`` tokens; a coarse block wholly inside the layout is full, one partly inside
    is partial and a ``mask_mod`` looks the token pair's fine block up in :func:`block_table`.
    """
    from torch.nn.attention.flex_attention import BlockMask

    table, block = block_table(layout), layout.block_size
    H, nq, nk = table.shape
    if coarsen == 1:
        empty = torch.zeros_like(table)
        return BlockMask.from_kv_blocks(*_kv_blocks(empty), *_kv_blocks(table), BLOCK_SIZE=block,
                                        seq_lengths=(seq, seq))
    coarse = table.view(H, nq // coarsen, coarsen, nk // coarsen, coarsen)
    active, full = coarse.any(dim=4).any(dim=2), coarse.all(dim=4).all(dim=2)

    def mask_mod(b, h, q_idx, kv_idx):
        return table[h, q_idx // block, kv_idx // block]
    return BlockMask.from_kv_blocks(*_kv_blocks(active & ~full), *_kv_blocks(full), BLOCK_SIZE=block * coarsen,
                                    mask_mod=mask_mod, seq_lengths=(seq, seq))


@contextlib.contextmanager
def flex_backward_tiles(block: int):
    """Compile FlexAttention's backward with ``block``-wide tiles (3 stages, 4 warps).

    Its sm_90 default for d=64 is (64, 128, 128, 64), which a 64-token BlockMask cannot take, and
    unlike the forward's, the backward's tiles cannot be set by ``kernel_options``.
    """
    from torch._inductor.template_heuristics import triton as heuristics

    cls = heuristics.CUDAConfigHeuristic
    original = cls.get_flex_attn_bwd_configs
    cls.get_flex_attn_bwd_configs = lambda self, head_dim, dtype: [
        heuristics.FlexBwDConfig(block, block, block, block, 3, 4)]
    try:
        yield
    finally:
        cls.get_flex_attn_bwd_configs = original


def run_flex(rec, layout, inputs, seq: int, ours) -> None:
    """Two FlexAttention rows: ``flex`` on the layout's own blocks (64-wide tiles, every block full),
    ``flex:128`` on 128-token blocks with partial blocks and a mask_mod (Flex's default tiles)."""
    if not is_gpu(inputs[0].device):
        return rec.skip("flex", "needs CUDA (torch.compile'd FlexAttention)")
    for name, coarsen in (("flex", 1), ("flex:128", 2)):
        try:
            _run_flex_one(rec, name, layout, inputs, seq, ours, coarsen)
        except Exception as err:  # noqa: BLE001 - a broken baseline is reported, not fatal
            rec.skip(name, f"failed: {type(err).__name__}: {err}"[:300])
    return None


def compiled_flex(layout, inputs, seq: int, coarsen: int = 1):
    """FlexAttention on ``layout``, compiled by a first forward+backward on ``inputs``.

    Returns ``(attn, info)``: ``attn(q, k, v)`` and the mask build and compile facts. ``coarsen=1``
    tiles at the layout's block size: Inductor's sm_90 forward tiles are 128 wide, which a
    64-token BlockMask refuses ("Q and KV block size must be divisible by BLOCK_M and BLOCK_N").
    """
    from torch.nn.attention.flex_attention import flex_attention

    device = inputs[0].device
    # a fresh compile per mask: Dynamo would otherwise hit its recompile limit (8) by 64K and fall
    # back to eager Flex, which materialises the whole score matrix (192 GiB at 64K)
    torch._dynamo.reset()
    # the attention benchmark times the backward alone with retain_graph=True, which donated
    # buffers forbid
    torch._functorch.config.donated_buffer = False
    block_mask = None

    def build():
        nonlocal block_mask
        block_mask = flex_block_mask(layout, seq, coarsen)
    build_s = wall_s(build, device)
    mask_mib = sum(t.numel() * t.element_size() for t in block_mask.as_tuple() if torch.is_tensor(t)) / 2**20
    flex = torch.compile(flex_attention, dynamic=False)
    tiles = {"BLOCK_M": layout.block_size, "BLOCK_N": layout.block_size} if coarsen == 1 else {}
    attn = lambda q, k, v: flex(q, k, v, block_mask=block_mask, kernel_options=tiles)  # noqa: E731
    with flex_backward_tiles(layout.block_size) if coarsen == 1 else contextlib.nullcontext():
        compile_s = wall_s(lambda: attn(*inputs).backward(torch.ones_like(inputs[0])), device)
    for x in inputs:
        x.grad = None
    blocks = f"{layout.block_size * coarsen}-token blocks" + (", partial + mask_mod" if coarsen > 1 else "")
    return attn, {"mask_build_s": build_s, "mask_mib": mask_mib, "first_call_s": compile_s,
                  "kernel_options": tiles, "block_mask": blocks}


def _run_flex_one(rec, name: str, layout, inputs, seq: int, ours, coarsen: int) -> None:
    attn, extra = compiled_flex(layout, inputs, seq, coarsen)
    if ours is not None:
        with torch.no_grad():
            extra["rel_err_vs_ours"] = relative_error(attn(*inputs), ours(*inputs))
        if extra["rel_err_vs_ours"] > 2e-2:  # not timed: a different mask is no comparison
            return rec.skip(name, f"FlexAttention and ours disagree (relative error "
                                  f"{extra['rel_err_vs_ours']:.2e}): the BlockMask differs")
    rec.measure(name, attn, **extra)
    return None


def run_sdpa(rec, device: str, dense_fwd_gflop: float) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    for name in ["flash", "cudnn", "efficient"] if is_gpu(device) else ["math"]:
        def attn(q, k, v, backend=backends[name]):
            with sdpa_kernel([backend]):
                return scaled_dot_product_attention(q, k, v)
        try:
            rec.measure(f"sdpa:{name}", attn, dense_fwd_gflop=dense_fwd_gflop)
        except RuntimeError as err:  # backend unavailable for this device, dtype or shape
            rec.skip(f"sdpa:{name}", str(err).splitlines()[0][:200])


def run_hf(rec, args, batch: int, seq: int, device, dtype) -> None:
    if seq != 4096:
        return rec.skip("hf", "run at T=4096 only")
    if not is_gpu(device):
        return rec.skip("hf", "GPU only")
    try:
        from transformers import BigBirdConfig
        from transformers.models.big_bird.modeling_big_bird import BigBirdBlockSparseAttention, BigBirdModel
    except ImportError as err:
        return rec.skip("hf", f"transformers not importable: {err}")
    config = BigBirdConfig(hidden_size=args.heads * args.head_dim, num_attention_heads=args.heads,
                           attention_type="block_sparse", block_size=args.block, num_random_blocks=3,
                           max_position_embeddings=seq)
    module = BigBirdBlockSparseAttention(config, seed=0).to(device, dtype).train()
    module.query = module.key = module.value = torch.nn.Identity()  # time attention only
    blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(
        torch.ones(batch, seq, device=device, dtype=dtype), args.block)
    masks = dict(band_mask=band, from_mask=from_mask, to_mask=to_mask, from_blocked_mask=blocked,
                 to_blocked_mask=blocked)

    def attn(q, k, v):  # q = k = v, as [B, T, H*D] hidden states
        hidden = q.transpose(1, 2).reshape(batch, seq, -1)
        out = module(hidden, **masks)[0]
        return out.view(batch, seq, args.heads, args.head_dim).transpose(1, 2)
    rec.measure("hf", attn)
    return None
