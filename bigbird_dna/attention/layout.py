"""Block layouts: which key blocks each query block attends to.

The sequence is cut into blocks of ``block_size`` tokens; block ``i`` holds tokens
``[i*b, (i+1)*b)`` (0-based, half-open) and the last block may be partial. A :class:`BlockLayout` is
a directed block graph per head, stored as compact CSR tables flattened over heads (all int32, on
one device, memory O(nnz), which is O(T) for every sparse preset):

- ``kv_ptr [H*nq + 1]``, ``kv_idx [nnz]``: for row ``r = h*nq + i``, the key blocks of query block
  ``i`` in head ``h`` are ``kv_idx[kv_ptr[r]:kv_ptr[r+1]]``, sorted ascending, no duplicates.
- ``q_ptr [H*nk + 1]``, ``q_idx [nnz]``: the transpose: for column ``c = h*nk + j``, the query
  blocks that attend to key block ``j`` (sorted ascending). The backward pass uses it for dK/dV.

Patterns that build layouts (window, random and global blocks) are in
:mod:`bigbird_dna.attention.patterns`.
"""

from __future__ import annotations

import torch

from bigbird_dna.errors import InputError

_SIZES = ("block_size", "num_heads", "num_q_blocks", "num_k_blocks")
_TABLES = ("kv_ptr", "kv_idx", "q_ptr", "q_idx")
_BIG = 1 << 40  # sentinel block index for "no block"; larger than any real index


def num_blocks_for(seq_len: int, block_size: int) -> int:
    """Number of blocks covering ``seq_len`` tokens: ``ceil(seq_len / block_size)``."""
    return -(-seq_len // block_size)


def _ptr_from_counts(counts: torch.Tensor) -> torch.Tensor:
    return torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)]).to(torch.int32)


class BlockLayout:
    """Immutable CSR block graph; see the module docstring for the table conventions.

    Build it from a :class:`SparsePattern`, :func:`layout_for`, :meth:`from_block_mask` or
    :meth:`from_state_dict`. Do not modify the tables in place: layouts are cached and shared.
    """

    __slots__ = _SIZES + _TABLES

    def __init__(self, block_size: int, num_heads: int, num_q_blocks: int, num_k_blocks: int,
                 kv_ptr: torch.Tensor, kv_idx: torch.Tensor, q_ptr: torch.Tensor, q_idx: torch.Tensor):
        values = dict(zip(_SIZES + _TABLES, (int(block_size), int(num_heads), int(num_q_blocks),
                                             int(num_k_blocks), kv_ptr, kv_idx, q_ptr, q_idx)))
        for name, value in values.items():
            object.__setattr__(self, name, value)
        expected = {"kv_ptr": num_heads * num_q_blocks + 1, "q_ptr": num_heads * num_k_blocks + 1,
                    "kv_idx": kv_idx.numel(), "q_idx": kv_idx.numel()}
        for name, length in expected.items():
            table = values[name]
            if table.dtype != torch.int32 or table.shape != (length,) or table.device != kv_ptr.device:
                raise InputError(f"BlockLayout table {name} must be int32 of shape ({length},) on "
                                 f"{kv_ptr.device}, got {table.dtype} {tuple(table.shape)} on {table.device}")

    def __setattr__(self, name, value):
        raise AttributeError("BlockLayout is immutable; build a new one instead")

    def __repr__(self) -> str:
        return (f"BlockLayout(block_size={self.block_size}, num_heads={self.num_heads}, "
                f"num_q_blocks={self.num_q_blocks}, num_k_blocks={self.num_k_blocks}, "
                f"nnz={self.nnz}, device={self.device})")

    @property
    def nnz(self) -> int:
        """Number of (head, query block, key block) edges."""
        return self.kv_idx.numel()

    @property
    def device(self) -> torch.device:
        return self.kv_ptr.device

    def row_lengths(self) -> torch.Tensor:
        """Key blocks per flattened row ``h*nq + i``: int64 ``[H*nq]``."""
        return (self.kv_ptr[1:] - self.kv_ptr[:-1]).long()

    def to(self, device) -> BlockLayout:
        """The same layout with its tables on ``device``."""
        return BlockLayout(*(getattr(self, n) for n in _SIZES), *(getattr(self, n).to(device) for n in _TABLES))

    def state_dict(self) -> dict:
        """Plain ints and int32 tensors; :meth:`from_state_dict` restores the exact layout."""
        return {name: getattr(self, name) for name in _SIZES + _TABLES}

    @classmethod
    def from_state_dict(cls, state: dict, device=None) -> BlockLayout:
        missing = [name for name in _SIZES + _TABLES if name not in state]
        if missing:
            raise InputError(f"BlockLayout state_dict lacks {missing}; save it with layout.state_dict()")
        tables = [torch.as_tensor(state[name], device=device) for name in _TABLES]
        return cls(*(state[name] for name in _SIZES), *tables)

    def equals(self, other: BlockLayout) -> bool:
        """True when both layouts have the same sizes and identical tables (on any devices)."""
        return (all(getattr(self, n) == getattr(other, n) for n in _SIZES)
                and all(torch.equal(getattr(self, n).cpu(), getattr(other, n).cpu()) for n in _TABLES))

    @classmethod
    def from_pairs(cls, heads: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor, *, num_heads: int,
                   num_q_blocks: int, num_k_blocks: int, block_size: int) -> BlockLayout:
        """Build from COO edges ``(heads[e], rows[e], cols[e])``, each ``[E]``; duplicates merge."""
        nq, nk = num_q_blocks, num_k_blocks
        key = torch.unique((heads.long() * nq + rows.long()) * nk + cols.long())  # sorted by row, col
        flat_row, col = key // nk, key % nk
        kv_ptr = _ptr_from_counts(torch.bincount(flat_row, minlength=num_heads * nq))
        head, row = flat_row // nq, flat_row % nq
        tkey = torch.sort((head * nk + col) * nq + row).values  # sorted by (head, key block, query)
        q_ptr = _ptr_from_counts(torch.bincount(tkey // nq, minlength=num_heads * nk))
        return cls(block_size, num_heads, nq, nk, kv_ptr, col.to(torch.int32), q_ptr, (tkey % nq).to(torch.int32))

    @classmethod
    def from_block_mask(cls, mask: torch.Tensor, block_size: int) -> BlockLayout:
        """Build from a boolean ``[H, nq, nk]`` block mask (``mask[h, i, j]``: i attends to j)."""
        if mask.dim() != 3 or mask.dtype != torch.bool:
            raise InputError(f"block mask must be bool [H, nq, nk], got {mask.dtype} {tuple(mask.shape)}")
        h, i, j = mask.nonzero(as_tuple=True)
        H, nq, nk = mask.shape
        return cls.from_pairs(h, i, j, num_heads=H, num_q_blocks=nq, num_k_blocks=nk, block_size=block_size)

    def to_block_mask(self) -> torch.Tensor:
        """Dense bool ``[H, nq, nk]`` block mask, O((T/b)^2): for tests, plots and the dense path of
        :func:`~bigbird_dna.attention.torch_backend.torch_block_sparse_attention` (short sequences)."""
        H, nq, nk = self.num_heads, self.num_q_blocks, self.num_k_blocks
        # output_size: no device sync, so the [CLS]-only path can be captured in a CUDA graph
        rows = torch.repeat_interleave(torch.arange(H * nq, device=self.device), self.row_lengths(),
                                       output_size=self.kv_idx.numel())
        mask = torch.zeros(H * nq * nk, dtype=torch.bool, device=self.device)
        mask[rows * nk + self.kv_idx.long()] = True
        return mask.view(H, nq, nk)
