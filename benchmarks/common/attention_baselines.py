"""The attention methods ``benchmarks/attention.py`` compares ours with, in the same run.

- FlexAttention on the same block graph (:data:`FLEX_MODES`): ``flex``, compiled in the default
  mode on a BlockMask of the layout's own blocks (all full, no mask_mod), its tiles restricted to
  those that divide the block; ``flex:max-autotune``, the same autotuned
  (``max-autotune-no-cudagraphs``: Inductor's own CUDA graphs would clash with the benchmark's);
  ``flex:128`` (on request), 128-token blocks whose partial ones a mask_mod resolves, where Flex's
  default sm_90 tiles fit. Each is gated against ours (output and gradients) before it is timed;
  a failure (compile, autotuning, gate, memory) is a skipped row with the reason, never fatal.
- dense ``scaled_dot_product_attention`` per backend (the backend is part of the method name);
- HF transformers ``BigBirdBlockSparseAttention`` at T=4096 with identity projections.

Dense SDPA and HF compute other attention (every pair; HF's own random plan), so they have no
gate. Each ``run_*`` adds its rows to a ``Recorder`` (see ``attention.py``). Shapes: q, k, v
``[B, H, T, D]``.
"""
from __future__ import annotations

import contextlib
import dataclasses

import torch

from benchmarks.common.attention_measure import SLOW_CALL_MS, errors, gate_against, release
from benchmarks.common.harness import is_gpu, wall_s


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


FLEX_MODES = {"default": ("flex", 1, None), "max-autotune": ("flex:max-autotune", 1, "max-autotune-no-cudagraphs"),
              "coarse128": ("flex:128", 2, None)}  # mode -> (method name, coarsen, torch.compile mode)


def _fitting(configs: list, block: int, names: tuple[str, ...], forced=None) -> list:
    """``configs`` with every one whose tiles (fields ``names``) do not divide ``block`` replaced,
    by ``forced`` or, when that is None, by itself with those tiles cut to ``block``; without
    duplicates, in their order."""
    kept = []
    for conf in configs:
        if not all(block % getattr(conf, name) == 0 for name in names):
            conf = forced or dataclasses.replace(conf, **{name: min(getattr(conf, name), block) for name in names})
        if conf not in kept:
            kept.append(conf)
    return kept


@contextlib.contextmanager
def flex_tiles_fitting(block: int, log: dict):
    """Inductor's FlexAttention tile configs, forward and backward, restricted to tiles that divide
    ``block`` (the BlockMask's block size): Flex's own choices where they fit; else, forward, the
    same config with its tiles cut to ``block``, and backward ``block``-wide tiles with 3 stages and
    4 warps (the backward that ran on an H100; its sm_90 default asks 8 warps of 128-wide tiles).

    Flex's sm_90 defaults for d=64 are 128 wide, which a 64-token BlockMask refuses ("Q and KV
    block size must be divisible by BLOCK_M and BLOCK_N"; the backward just finds no valid choice,
    NoValidChoicesError), and the backward's tiles cannot be set through ``kernel_options``.
    ``log`` receives, per direction, Flex's configs and the ones kept (as strings).
    """
    from torch._inductor.template_heuristics import triton as heuristics

    cls = heuristics.CUDAConfigHeuristic
    originals = {"fwd": cls.get_flex_attn_fwd_configs, "bwd": cls.get_flex_attn_bwd_configs}
    shapes = {"fwd": (("block_m", "block_n"), None),
              "bwd": (("block_m1", "block_n1", "block_m2", "block_n2"),
                      heuristics.FlexBwDConfig(block, block, block, block, 3, 4))}

    def patched(direction):
        names, forced = shapes[direction]

        def configs(self, head_dim, dtype):
            offered = originals[direction](self, head_dim, dtype)
            kept = _fitting(offered, block, names, forced)
            log[direction] = {"flex_offered": [str(c) for c in offered], "kept": [str(c) for c in kept]}
            return kept
        return configs
    cls.get_flex_attn_fwd_configs, cls.get_flex_attn_bwd_configs = patched("fwd"), patched("bwd")
    try:
        yield log
    finally:
        cls.get_flex_attn_fwd_configs, cls.get_flex_attn_bwd_configs = originals["fwd"], originals["bwd"]


def compiled_flex(layout, inputs, seq: int, mode: str = "default"):
    """FlexAttention on ``layout`` (``FLEX_MODES[mode]``), compiled by a first forward+backward.

    Returns ``(attn, info)``: ``attn(q, k, v)`` and the facts of the mask build and the compile.
    No dense T x T tensor anywhere: the BlockMask is built from the ``[H, nq, nk]`` block table
    (``from_kv_blocks``, never ``create_block_mask``), and the compile is ``fullgraph=True`` so that
    Dynamo raises instead of falling back to eager Flex, which materialises every score (a
    192 GiB request at 64K x 12 heads). Dynamo is reset first: a fresh compile per mask (its
    recompile limit is 8), and donated buffers are off (the backward is timed on a retained graph).
    """
    from torch.nn.attention.flex_attention import flex_attention

    _, coarsen, compile_mode = FLEX_MODES[mode]
    device = inputs[0].device
    torch._dynamo.reset()
    torch._functorch.config.donated_buffer = False
    block_mask = None

    def build():
        nonlocal block_mask
        block_mask = flex_block_mask(layout, seq, coarsen)
    build_s = wall_s(build, device)
    mask_mib = sum(t.numel() * t.element_size() for t in block_mask.as_tuple() if torch.is_tensor(t)) / 2**20
    options = {"dynamic": False, "fullgraph": True, **({"mode": compile_mode} if compile_mode else {})}
    flex = torch.compile(flex_attention, **options)
    attn = lambda q, k, v: flex(q, k, v, block_mask=block_mask)  # noqa: E731
    tiles: dict = {}
    with flex_tiles_fitting(layout.block_size * coarsen, tiles):
        compile_s = wall_s(lambda: attn(*inputs).backward(torch.ones_like(inputs[0])), device)
    for x in inputs:
        x.grad = None
    blocks = f"{layout.block_size * coarsen}-token blocks" + (", partial + mask_mod" if coarsen > 1 else ", all full")
    return attn, {"mask_build_s": build_s, "mask_mib": mask_mib, "first_call_s": compile_s, "tiles": tiles,
                  "block_mask": blocks, "compile": {k: str(v) for k, v in options.items()}}


def run_flex(rec, layout, seq: int, mode: str, want: tuple, against: str) -> None:
    """One FlexAttention row (``mode`` of :data:`FLEX_MODES`): compiled, gated against ``want``
    (out, dq, dk, dv: ours, or the fp32 reference if ours failed), timed eager and as a CUDA-graph
    replay. Any failure becomes a skipped row with its reason."""
    name = FLEX_MODES[mode][0]
    q = rec.inputs[0]
    if not is_gpu(q.device):
        return rec.skip(name, "needs CUDA (torch.compile'd FlexAttention)")
    try:
        attn, extra = compiled_flex(layout, rec.inputs, seq, mode)
        gate, got = gate_against(attn, *rec.inputs, rec.grad_out, want, against)
        if rec.reference is not None:
            extra["rel_err_vs_fp32_reference"] = errors(got, rec.reference)
        del got
        rec.measure(name, attn, gate=gate, **extra)
    except Exception as err:  # noqa: BLE001 - a broken baseline is reported, not fatal
        rec.skip(name, f"failed: {type(err).__name__}: {err}"[:300])
    finally:
        release(q.device)
    return None


NO_GATE_DENSE = "not applicable: dense attention computes every pair, not the block graph"
NO_GATE_HF = "not applicable: HF BigBird attends its own random plan"


def run_sdpa(rec, device: str, dense_fwd_gflop: float, backends_wanted=("flash", "cudnn", "efficient")) -> None:
    """Dense SDPA rows, one per backend in ``backends_wanted`` that runs (math only, off CUDA).
    A step over ``attention_measure.SLOW_CALL_MS`` is timed whole (forward+backward) only."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    for name in list(backends_wanted) if is_gpu(device) else ["math"]:
        def attn(q, k, v, backend=backends[name]):
            with sdpa_kernel([backend]):
                return scaled_dot_product_attention(q, k, v)
        try:
            rec.measure(f"sdpa:{name}", attn, whole_above_ms=SLOW_CALL_MS, gate=NO_GATE_DENSE,
                        dense_fwd_gflop=dense_fwd_gflop)
        except RuntimeError as err:  # backend unavailable for this device, dtype or shape
            rec.skip(f"sdpa:{name}", str(err).splitlines()[0][:200])
        finally:
            release(device)


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
    rec.measure("hf", attn, gate=NO_GATE_HF)
    return None
