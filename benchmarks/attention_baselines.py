"""The attention methods ``benchmarks/attention.py`` compares ours with, in the same run.

- FlexAttention on the same block graph (a BlockMask built once, every block full, no mask_mod);
- dense ``scaled_dot_product_attention`` per backend (the backend is part of the method name);
- HF transformers ``BigBirdBlockSparseAttention`` at T=4096 with identity projections.

Each ``run_*`` adds its rows to a ``Recorder`` (see ``attention.py``), or a skipped row with the
reason. Shapes: q, k, v ``[B, H, T, D]``.
"""
from __future__ import annotations

import torch

from benchmarks.harness import is_gpu, relative_error, wall_s


def flex_block_mask(layout, seq: int):
    """FlexAttention BlockMask with the layout's blocks, all full, indices padded to nb ([1, H, nq, nb])."""
    from torch.nn.attention.flex_attention import BlockMask

    H, nq, nk = layout.num_heads, layout.num_q_blocks, layout.num_k_blocks
    lengths = (layout.kv_ptr[1:] - layout.kv_ptr[:-1]).long()
    slot = torch.arange(nk, device=lengths.device)
    pos = (layout.kv_ptr[:-1].long()[:, None] + slot).clamp(max=layout.nnz - 1)
    indices = torch.where(slot < lengths[:, None], layout.kv_idx[pos], 0).to(torch.int32)
    zeros = torch.zeros(1, H, nq, dtype=torch.int32, device=lengths.device)
    return BlockMask.from_kv_blocks(zeros, torch.zeros_like(indices).view(1, H, nq, nk),
                                    lengths.to(torch.int32).view(1, H, nq), indices.view(1, H, nq, nk),
                                    BLOCK_SIZE=layout.block_size, seq_lengths=(seq, seq))


def run_flex(rec, layout, inputs, seq: int, ours) -> None:
    if not is_gpu(inputs[0].device):
        return rec.skip("flex", "needs CUDA (torch.compile'd FlexAttention)")
    from torch.nn.attention.flex_attention import flex_attention

    device = inputs[0].device
    block_mask = None

    def build():
        nonlocal block_mask
        block_mask = flex_block_mask(layout, seq)
    build_s = wall_s(build, device)
    mask_mib = sum(t.numel() * t.element_size() for t in block_mask.as_tuple() if torch.is_tensor(t)) / 2**20
    flex = torch.compile(flex_attention, dynamic=False)
    attn = lambda q, k, v: flex(q, k, v, block_mask=block_mask)  # noqa: E731
    compile_s = wall_s(lambda: attn(*inputs).backward(torch.ones_like(inputs[0])), device)
    extra = {"mask_build_s": build_s, "mask_mib": mask_mib, "first_call_s": compile_s}
    if ours is not None:
        with torch.no_grad():
            extra["rel_err_vs_ours"] = relative_error(attn(*inputs), ours(*inputs))
        if extra["rel_err_vs_ours"] > 2e-2:
            raise SystemExit(f"FlexAttention and ours disagree (relative error {extra['rel_err_vs_ours']:.2e}): "
                             "the BlockMask differs")
    rec.measure("flex", attn, **extra)
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
