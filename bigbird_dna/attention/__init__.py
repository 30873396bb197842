"""Block-sparse attention for BigBird: layouts, backends and the public entry point.

>>> layout = layout_for("bigbird_itc", num_heads=H, num_blocks=num_blocks_for(T, 64), block_size=64,
...                     layer=i, seed=0, device=q.device)
>>> out = block_sparse_attention(q, k, v, layout, key_padding_mask=mask)   # [B, H, T, D]

Backends: ``"triton"`` (fused kernels in :mod:`bigbird_dna.attention.triton_kernels`, CUDA, or CPU
under ``TRITON_INTERPRET=1``) and ``"torch"`` (:func:`torch_block_sparse_attention`, any device).
Triton is optional: this package imports without it.
"""

from __future__ import annotations

import importlib.util
import os

import torch

from bigbird_dna.attention.layout import BlockLayout, num_blocks_for
from bigbird_dna.attention.patterns import PRESETS, SparsePattern, fits_sparse, layout_for, preset
from bigbird_dna.attention.reference import dense_reference_attention
from bigbird_dna.attention.torch_backend import attend_query_rows, torch_block_sparse_attention
from bigbird_dna.errors import InputError

__all__ = [
    "PRESETS",
    "BlockLayout",
    "SparsePattern",
    "attend_query_rows",
    "block_sparse_attention",
    "dense_reference_attention",
    "fits_sparse",
    "layout_for",
    "num_blocks_for",
    "preset",
    "torch_block_sparse_attention",
    "triton_available",
]

BACKENDS = ("auto", "triton", "torch")


def triton_available() -> bool:
    """Whether the ``triton`` package can be imported (it is not imported here)."""
    return importlib.util.find_spec("triton") is not None


TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def _resolve_backend(backend: str, device: torch.device, dtype: torch.dtype) -> str:
    if backend not in BACKENDS:
        raise InputError(f"unknown attention backend {backend!r}; choose one of {BACKENDS}")
    if backend == "auto":
        # fp64 (used by gradient checks) has no Triton kernel: it takes the PyTorch path.
        use_triton = device.type == "cuda" and dtype in TRITON_DTYPES and triton_available()
        return "triton" if use_triton else "torch"
    if backend == "triton":
        if not triton_available():
            raise InputError('backend="triton" needs the triton package: pip install "bigbird_dna[triton]", '
                             'or use backend="torch"')
        if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
            raise InputError(f'backend="triton" got {device.type} tensors: run on CUDA, set TRITON_INTERPRET=1 '
                             'before starting Python to use the Triton interpreter, or use backend="torch"')
    return backend


def block_sparse_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, layout: BlockLayout,
                           key_padding_mask: torch.Tensor | None = None, scale: float | None = None,
                           backend: str = "auto") -> torch.Tensor:
    """Attention restricted to the block graph ``layout``.

    Args:
        q, k, v: ``[B, H, T, D]``, one float dtype, one device. ``T`` need not be a multiple of
            ``layout.block_size``; the layout must have ``H`` heads and ``ceil(T/b)`` blocks.
        layout: a :class:`BlockLayout` on the same device (see :func:`layout_for`).
        key_padding_mask: optional bool ``[B, T]``, True = real token. Padding keys are never
            attended; padding query rows, and rows with no attendable key, output exactly 0.
        scale: score multiplier, default ``1/sqrt(D)``.
        backend: ``"auto"`` (triton for fp16/bf16/fp32 CUDA tensors when installed, else torch),
            ``"triton"`` or ``"torch"``.

    Returns:
        ``[B, H, T, D]`` in the dtype of ``q``.

    The backend checks the inputs (:func:`~bigbird_dna.attention.conventions.check_attention_inputs`),
    once per call.
    """
    if _resolve_backend(backend, q.device, q.dtype) == "triton":
        from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

        return triton_block_sparse_attention(q, k, v, layout, key_padding_mask=key_padding_mask, scale=scale)
    return torch_block_sparse_attention(q, k, v, layout, key_padding_mask=key_padding_mask, scale=scale)
