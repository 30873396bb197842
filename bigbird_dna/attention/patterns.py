"""Sparse patterns: the presets of BigBird (paper Fig. 1 and Tab. 1) and the layouts they build.

:class:`SparsePattern` describes a pattern and builds a :class:`~bigbird_dna.attention.layout.BlockLayout`
from it with torch ops on the target device, without host NumPy or loops over blocks. Random blocks
come from a counter-based hash of (seed, layer, head, num_blocks, row, draw), so CPU and CUDA give
identical tables. :func:`layout_for` is the factory the model uses (its
:class:`~bigbird_dna.model.layout_registry.LayoutRegistry` keeps what it gets: the one cache of
layouts); it falls back to exact dense attention for sequences too short for the pattern (see
:meth:`SparsePattern.fits`), for that call only.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields

import torch

from bigbird_dna.attention.layout import _BIG, BlockLayout
from bigbird_dna.errors import InputError

# --- counter-based hashing (identical on every device) -------------------------------------------

def _signed(value: int) -> int:
    value %= 1 << 64
    return value - (1 << 64) if value >= 1 << 63 else value


_GOLDEN, _MIX1, _MIX2 = _signed(0x9E3779B97F4A7C15), _signed(0xBF58476D1CE4E5B9), _signed(0x94D049BB133111EB)


def _shr(z: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 (torch's ``>>`` is arithmetic on negative values)."""
    return (z >> s) & ((1 << (64 - s)) - 1)


def splitmix64(z: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors; int64 multiplication wraps modulo 2^64."""
    z = z + _GOLDEN
    z = (z ^ _shr(z, 30)) * _MIX1
    z = (z ^ _shr(z, 27)) * _MIX2
    return z ^ _shr(z, 31)


def _random_blocks(excluded: torch.Tensor, num_blocks: int, num_random: int, keys: torch.Tensor) -> torch.Tensor:
    """Draw ``num_random`` distinct blocks per row, uniformly among blocks not in ``excluded``.

    ``excluded [R, E]`` holds block indices (out-of-range entries and duplicates are ignored) and
    ``keys [R]`` the per-row hash state. Returns ``[R, num_random]`` int64; a row with fewer
    candidates than ``num_random`` takes all of them and pads with ``_BIG``.
    """
    excl = torch.where((excluded >= 0) & (excluded < num_blocks), excluded, _BIG).sort(dim=1).values
    dup = torch.zeros_like(excl, dtype=torch.bool)
    dup[:, 1:] = excl[:, 1:] == excl[:, :-1]
    excl = torch.where(dup, _BIG, excl).sort(dim=1).values
    picks = []
    for draw in range(num_random):
        candidates = num_blocks - (excl < num_blocks).sum(1)
        rank = _shr(splitmix64(keys ^ draw), 1) % candidates.clamp(min=1)
        # With excl sorted and distinct, excl[k] - k candidates lie below excl[k], so the candidate
        # of rank u is u plus the number of excluded blocks k with excl[k] - k <= u.
        slot = torch.arange(excl.shape[1], device=excl.device)
        pick = rank + ((excl - slot) <= rank[:, None]).sum(1)
        pick = torch.where(candidates > 0, pick, _BIG)
        picks.append(pick)
        excl = torch.cat([excl, pick[:, None]], 1).sort(dim=1).values
    return torch.stack(picks, 1) if picks else excluded.new_zeros(excluded.shape[0], 0)


# --- patterns --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SparsePattern:
    """A block-sparse pattern, independent of length. Build layouts with :meth:`build`.

    Fields (all in blocks): ``window`` (odd; keys ``i - window//2 .. i + window//2``, clipped at the
    edges; 0 = none), ``global_head`` / ``global_tail`` (the first / last blocks are global: their
    query rows attend to every block and every row attends to them), ``num_random`` (random key
    blocks per non-global row, drawn over the whole sequence outside that row's window and the
    global blocks, without duplicates), ``prepend`` (extra global blocks placed before the sequence,
    ETC style: a layout for ``num_blocks`` sequence blocks then has ``prepend + num_blocks`` blocks),
    ``dense`` (complete graph).
    """

    window: int = 0
    global_head: int = 0
    global_tail: int = 0
    num_random: int = 0
    prepend: int = 0
    dense: bool = False

    def __post_init__(self):
        for f in fields(self)[:5]:
            if not isinstance(getattr(self, f.name), int) or getattr(self, f.name) < 0:
                raise InputError(f"{f.name} must be a non-negative int, got {getattr(self, f.name)!r}")
        if self.window % 2 == 0 and self.window != 0:
            raise InputError(f"window must be odd (centred on the diagonal) or 0, got {self.window}")

    @classmethod
    def bigbird_itc(cls, window: int = 3, num_random: int = 3, global_per_end: int = 1) -> SparsePattern:
        """BigBird-ITC: the first and last ``global_per_end`` blocks are global (paper g = 2 blocks
        means ``global_per_end=1``), a window of ``window`` blocks and ``num_random`` random blocks."""
        return cls(window=window, global_head=global_per_end, global_tail=global_per_end, num_random=num_random)

    @classmethod
    def bigbird_etc(cls, num_global: int = 2, window: int = 3) -> SparsePattern:
        """BigBird-ETC: ``num_global`` extra global blocks prepended to the sequence, plus a window."""
        return cls(window=window, global_head=num_global, prepend=num_global)

    @classmethod
    def longformer(cls, window: int = 3, num_global: int = 1) -> SparsePattern:
        """Sliding window plus the first ``num_global`` sequence blocks as global."""
        return cls(window=window, global_head=num_global)

    @classmethod
    def window_only(cls, window: int = 3) -> SparsePattern:
        return cls(window=window)

    @classmethod
    def random_only(cls, num_random: int = 3) -> SparsePattern:
        """Random blocks only, drawn among all blocks (the paper's Tab. 1 "R" ablation)."""
        return cls(num_random=num_random)

    @classmethod
    def window_random(cls, window: int = 3, num_random: int = 3) -> SparsePattern:
        return cls(window=window, num_random=num_random)

    @classmethod
    def full(cls) -> SparsePattern:
        """Dense attention: every block attends to every block."""
        return cls(dense=True)

    def total_blocks(self, num_blocks: int) -> int:
        """Blocks in a layout for ``num_blocks`` sequence blocks (adds the ETC prepended blocks)."""
        return self.prepend + num_blocks

    def fits(self, num_blocks: int) -> bool:
        """Whether the sparse pattern is used as-is for ``num_blocks`` sequence blocks.

        Rule: ``total_blocks > window + global_head + global_tail + 2 * num_random``; shorter inputs
        get exact dense attention. With the ITC defaults (3, 3, 1) that is ``num_blocks >= 12``, i.e.
        the HF threshold "L > (5 + 2r) * b" (704 tokens at b = 64): below it a middle row would see
        most of the sequence and have barely more candidates than random draws.
        """
        budget = self.window + self.global_head + self.global_tail + 2 * self.num_random
        return self.dense or self.total_blocks(num_blocks) > budget

    def build(self, num_heads: int, num_blocks: int, block_size: int, *, seed: int = 0, layer: int = 0,
              device="cpu") -> BlockLayout:
        """Layout for ``num_blocks`` sequence blocks (``num_blocks_for(T, b)``), no dense fallback.

        Random blocks are a fixed function of (seed, layer, head, total blocks): the same on every
        device and every call.
        """
        if min(num_heads, num_blocks, block_size) < 1:
            raise InputError(f"num_heads, num_blocks and block_size must be >= 1, got "
                             f"{num_heads}, {num_blocks}, {block_size}")
        nb = self.total_blocks(num_blocks)
        blocks = torch.arange(nb, device=device)
        shape = dict(num_heads=num_heads, num_q_blocks=nb, num_k_blocks=nb, block_size=block_size)
        if self.dense:
            rows, cols = blocks.repeat_interleave(nb), blocks.repeat(nb)
            heads = torch.arange(num_heads, device=device).repeat_interleave(nb * nb)
            return BlockLayout.from_pairs(heads, rows.repeat(num_heads), cols.repeat(num_heads), **shape)

        is_global = (blocks < self.global_head) | (blocks >= nb - self.global_tail)
        global_ids = blocks[is_global]
        half = self.window // 2
        window = blocks[:, None] + torch.arange(-half, half + 1, device=device)[: self.window]  # [nb, w]
        # Edges shared by all heads: window, global columns, global rows.
        in_window = (window >= 0) & (window < nb)
        rows = torch.cat([blocks[:, None].expand_as(window)[in_window], blocks.repeat_interleave(len(global_ids)),
                          global_ids.repeat_interleave(nb)])
        cols = torch.cat([window[in_window], global_ids.repeat(nb), blocks.repeat(len(global_ids))])
        heads = torch.arange(num_heads, device=device)
        shared = (heads.repeat_interleave(len(rows)), rows.repeat(num_heads), cols.repeat(num_heads))

        # Random edges, drawn per (head, row), flattened as r = h*nb + i.
        keys = splitmix64(torch.tensor(_signed(seed), dtype=torch.int64, device=device))
        for salt in (layer, nb):
            keys = splitmix64(keys ^ _signed(salt))
        keys = splitmix64(splitmix64(keys ^ heads[:, None]) ^ blocks[None, :]).reshape(-1)  # [H*nb]
        excluded = torch.cat([window, global_ids.expand(nb, -1)], 1).repeat(num_heads, 1)
        picks = _random_blocks(excluded, nb, self.num_random, keys)  # [H*nb, r]
        valid = (picks < nb) & ~is_global.repeat(num_heads)[:, None]  # global rows already see all
        rand_rows = torch.arange(num_heads * nb, device=device)[:, None].expand_as(picks)[valid]
        random = (rand_rows // nb, rand_rows % nb, picks[valid])
        return BlockLayout.from_pairs(*(torch.cat(pair) for pair in zip(shared, random)), **shape)


PRESETS = {
    "bigbird_itc": SparsePattern.bigbird_itc,
    "bigbird_etc": SparsePattern.bigbird_etc,
    "longformer": SparsePattern.longformer,
    "window_only": SparsePattern.window_only,
    "random_only": SparsePattern.random_only,
    "window_random": SparsePattern.window_random,
    "dense": SparsePattern.full,
}


def preset(name: str, **params) -> SparsePattern:
    """The :class:`SparsePattern` of a named preset (a key of :data:`PRESETS`) with its parameters."""
    if name not in PRESETS:
        raise InputError(f"unknown attention preset {name!r}; choose one of {sorted(PRESETS)}")
    accepted = set(inspect.signature(PRESETS[name]).parameters)
    if not accepted.issuperset(params):
        raise InputError(f"bad parameters {sorted(set(params) - accepted)} for attention preset {name!r}; "
                         f"it accepts {sorted(accepted)}")
    return PRESETS[name](**params)


def fits_sparse(pattern: str | SparsePattern, num_blocks: int, **params) -> bool:
    """Whether ``pattern`` stays sparse at ``num_blocks`` sequence blocks; see :meth:`SparsePattern.fits`."""
    return (preset(pattern, **params) if isinstance(pattern, str) else pattern).fits(num_blocks)


def _canonical_device(device) -> torch.device:
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return device


def layout_for(pattern: str | SparsePattern, num_heads: int, num_blocks: int, block_size: int, layer: int = 0,
               seed: int = 0, device="cpu", **params) -> BlockLayout:
    """The layout of one attention call: ``pattern`` (preset name plus ``params``, or a
    :class:`SparsePattern`) at ``num_blocks`` sequence blocks for ``layer``, built anew; the same
    arguments always give the same tables. Callers keep what they reuse (the model's
    :class:`~bigbird_dna.model.layout_registry.LayoutRegistry` pins one per layer and length).

    If the sequence is too short for the pattern (``not pattern.fits(num_blocks)``) this returns the
    dense layout with the same block count. The decision depends only on the arguments, so a short
    batch never changes what a later, longer batch gets.
    """
    if isinstance(pattern, str):
        pattern = preset(pattern, **params)
    elif params:
        raise InputError(f"pass parameters either in the SparsePattern or as keywords, not both: {params}")
    if not pattern.fits(num_blocks):
        pattern = SparsePattern(prepend=pattern.prepend, dense=True)
    return pattern.build(int(num_heads), int(num_blocks), int(block_size), seed=int(seed), layer=int(layer),
                         device=_canonical_device(device))
