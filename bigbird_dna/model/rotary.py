"""Rotary position embeddings (RoPE; Su et al. 2021) for the queries and keys of self-attention.

Each head's vector is split into two halves ``(x1, x2)`` (the GPT-NeoX layout) and pair ``j`` is
rotated by the angle ``position * base**(-2j / head_dim)``. The score of query ``i`` and key ``k``
then depends on their token offset ``k - i`` only, so a layer can learn "look at my neighbours"
once for every position, instead of learning it separately for each of ``max_positions`` learned
absolute embeddings. RoPE has no parameters and no length limit of its own.
"""

from __future__ import annotations

import torch
from torch import nn


class RotaryEmbedding(nn.Module):
    """Applies RoPE to ``[B, H, T, D]`` query and key tensors (``D`` even).

    Args:
        head_dim: ``D``, the per-head width.
        base: the wavelength base (10000, as in RoFormer and LLaMA).
    """

    def __init__(self, head_dim: int, base: float = 10000.0):
        super().__init__()
        if head_dim % 2:
            raise ValueError(f"RoPE needs an even head dimension, got {head_dim}")
        inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        self.register_buffer("inv_freq", inv_freq.float(), persistent=False)
        self._cache: tuple[int, torch.device, torch.Tensor, torch.Tensor] | None = None

    def _cos_sin(self, seq: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos, sin [T, D]`` of every position's angles; cached in eager mode. A compiled layer
        computes them in its graph, where they fuse into the rotation (and no cache needs guards)."""
        if torch.compiler.is_compiling():
            angles = self._angles(seq, device)
            return angles.cos(), angles.sin()
        if self._cache is None or self._cache[0] < seq or self._cache[1] != device:
            angles = self._angles(seq, device)
            self._cache = (seq, device, angles.cos(), angles.sin())
        return self._cache[2][:seq], self._cache[3][:seq]

    def _angles(self, seq: int, device: torch.device) -> torch.Tensor:
        angles = torch.arange(seq, device=device, dtype=torch.float32)[:, None] * self.inv_freq.to(device)
        return torch.cat([angles, angles], dim=-1)  # [T, D]

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate ``q, k [B, H, T, D]`` by their 0-based token positions ``0..T-1``."""
        cos, sin = self._cos_sin(q.shape[-2], q.device)
        return _rotate(q, cos, sin), _rotate(k, cos, sin)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return (x.float() * cos + rotated.float() * sin).to(x.dtype)
