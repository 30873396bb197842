"""Launch options of the Triton block-sparse kernels: what changes speed, never results (beyond
the rounding of split rows and atomics), and the named variants the benchmarks time.

**Index mode** (``KernelOptions.index_mode``). Compiled for sm_90 (bf16, block 64, D 64) with
triton 3.6.0 (the GPU image's) and 3.9.0 alike: with the block index loaded inside the loop
(``"loop"``), the TTGIR loop of all three kernels starts with ``async_wait {num =
0}`` (no prefetch) when there is no padding mask; with a padding mask forward and dQ already
pipeline (``num = 2``) but dK/dV does not. With the item's indices preloaded into registers
(``"preload"``) every case waits with ``num = 2`` (forward, dQ) or ``num = 4`` (dK/dV), for 2-4
more registers and 16-17 KiB more shared memory (the fused merge adds 6 more registers to the
forward: 126). dK/dV uses 194-198 registers at 4 warps (2
programs per SM); ``dkdv_num_warps=8`` gives 152-158, ``dkdv_maxnreg=168`` gives 168 with
112 bytes of spill (3 per SM). ``VARIANTS`` names the options that ``benchmarks/attention.py``
times side by side. The default, ``"preload-fused"``, was chosen on an H100 (bf16, 12 heads,
BigBird-ITC): its GPU time per forward+backward (CUDA-graph replay) was the lowest at 4K, 16K
and 64K tokens (0.127, 0.417, 1.679 ms against 0.134, 0.473, 1.746 for ``"loop"``); see
``benchmarks/README.md``.

**dQ** (``KernelOptions.dq``). ``"atomic"`` moves dQ into the dK/dV kernel: at sm_90, bf16,
block 64, D 64 that kernel takes 215 registers at 4 warps (188 at 8), no spills and 81 KiB of
shared memory, with 4-wide fp32 reductions; untimed on a GPU so far (``docs/kernels.md``).
"""
from __future__ import annotations

from dataclasses import dataclass

from bigbird_dna.attention.triton_schedule import ORDERS
from bigbird_dna.errors import InputError

INDEX_MODES = ("loop", "preload")
MERGES = ("launch", "fused")
DQ_MODES = ("kernel", "atomic")


@dataclass(frozen=True)
class KernelOptions:
    """Launch choices that change speed, never results (beyond the rounding of split rows and atomics).

    Attributes:
        index_mode: ``"loop"`` loads each key (query) block index inside the loop; ``"preload"``
            loads the item's indices into registers first, which lets Triton pipeline the K/V
            (Q/dO) loads (see the module docstring).
        chunk_blocks: most blocks per program; ``None`` sizes it from the total work and the SM
            count (:func:`~bigbird_dna.attention.triton_schedule.auto_chunk_blocks`).
        order: work-item order, ``"head_major"`` or ``"lpt"`` (see ``triton_schedule``).
        merge: ``"launch"`` merges the forward partials of split rows in a second kernel;
            ``"fused"`` lets the last item of each split row merge them (an arrival counter per
            row instead of a launch, and the merge leaves the critical path).
        dq: ``"kernel"`` computes dQ in its own kernel over the forward work list (recomputing
            ``Q K^T`` and ``dO V^T``: seven block products per pair in all); ``"atomic"`` lets
            the dK/dV kernel add ``dS K`` into an fp32 buffer with atomics, which one small
            kernel then scales into dQ (five products per pair; dQ's last bits then depend on
            the order of the atomics).
        dkdv_num_warps, dkdv_maxnreg: override the dK/dV kernel's warps and register cap.
    """

    index_mode: str = "loop"
    chunk_blocks: int | None = None
    order: str = "head_major"
    merge: str = "launch"
    dq: str = "kernel"
    dkdv_num_warps: int | None = None
    dkdv_maxnreg: int | None = None

    def __post_init__(self) -> None:
        if self.index_mode not in INDEX_MODES:
            raise InputError(f"index_mode must be one of {INDEX_MODES}, got {self.index_mode!r}")
        if self.merge not in MERGES:
            raise InputError(f"merge must be one of {MERGES}, got {self.merge!r}")
        if self.dq not in DQ_MODES:
            raise InputError(f"dq must be one of {DQ_MODES}, got {self.dq!r}")
        if self.order not in ORDERS:
            raise InputError(f"order must be one of {ORDERS}, got {self.order!r}")
        if self.chunk_blocks is not None and self.chunk_blocks < 1:
            raise InputError(f"chunk_blocks must be >= 1, got {self.chunk_blocks}")


# Named variants that benchmarks/attention.py times side by side. "v0" is the first schedule
# (index loaded in the loop, chunks of 32, longest-first order everywhere; its backward now shares
# the one-scatter fix-up of all variants).
VARIANTS = {
    "v0": KernelOptions(chunk_blocks=32, order="lpt"),
    "loop": KernelOptions(),
    "preload": KernelOptions(index_mode="preload"),
    "preload-fused": KernelOptions(index_mode="preload", merge="fused"),
    "preload-dkdv-w8": KernelOptions(index_mode="preload", dkdv_num_warps=8),
    "preload-dkdv-r168": KernelOptions(index_mode="preload", dkdv_maxnreg=168),
    "preload-fused-atomic-dq": KernelOptions(index_mode="preload", merge="fused", dq="atomic"),
    "preload-fused-atomic-dq-w8": KernelOptions(index_mode="preload", merge="fused", dq="atomic", dkdv_num_warps=8),
}


def _launch_config(block: int, head_dim: int, elem_size: int, backward: bool) -> dict:
    """num_warps / num_stages: untuned first guesses, ignored by the interpreter.

    Fewer pipeline stages for bigger tiles keep shared memory within an A100's 163 KiB (160 KiB at
    block 128 x D 128 in half precision; the tests compile the kernels and check).
    """
    tile_kib = block * head_dim * elem_size // 1024
    stages = (3 if tile_kib <= 8 else 2 if tile_kib <= 16 else 1) if backward else (3 if tile_kib <= 16 else 2)
    return {"num_warps": 4 if block * head_dim <= 64 * 64 else 8, "num_stages": stages}


def _dkdv_config(config: dict, options: KernelOptions) -> dict:
    config = dict(config)
    if options.dkdv_num_warps is not None:
        config["num_warps"] = options.dkdv_num_warps
    if options.dkdv_maxnreg is not None:
        config["maxnreg"] = options.dkdv_maxnreg
    return config
