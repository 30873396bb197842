"""Work lists for the block-sparse Triton kernels: CSR rows split into bounded chunks.

A CSR table (``ptr [R + 1]``, one row per (layout head, block)) becomes a list of work items,
one Triton program each. A row with more than ``chunk`` entries (a BigBird global query row in the
forward table, a global key column in the transposed table) is split into several items whose
results are merged afterwards, so that no program is a straggler.

Order (``order``): ``"head_major"`` (default) runs the split items first, longest first, then the
whole rows in head-major row order, so that the programs in flight share one head's K/V (forward,
dQ) or Q/dO (dK/dV) in L2; ``"lpt"`` sorts every item longest-first (ties head-major), which
interleaves heads wherever row lengths vary (the transposed table's random in-degrees).

Chunk size (:func:`auto_chunk_blocks`): from the total work and the number of resident programs,
so that at small problems (4K tokens, batch 1) the split global rows are not the critical path.

Building a plan needs one host sync (the number of items sizes the grid). Plans are cached per
``ptr`` tensor for as long as that tensor lives (a weak reference, no size limit), so a model with
any number of layers and padded lengths builds each plan once and later calls run sync-free.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

ORDERS = ("head_major", "lpt")


@dataclass(frozen=True)
class WorkPlan:
    """Chunked schedule over one CSR table. All tensors int32 on the table's device.

    Item ``w`` covers ``idx[item_start[w]:item_end[w]]`` of CSR row ``item_row[w]``.
    ``item_part[w]``: the item's private partial slot (forward merge), ``-1`` if its row is whole.
    ``item_group[w]``: the index of its split row (backward accumulation), ``-1`` if whole.
    Split row ``g`` is CSR row ``group_row[g]`` with parts
    ``group_first_part[g] .. group_first_part[g] + group_num_parts[g] - 1``.
    """

    item_row: torch.Tensor  # [W]
    item_start: torch.Tensor  # [W]
    item_end: torch.Tensor  # [W]
    item_part: torch.Tensor  # [W]
    item_group: torch.Tensor  # [W]
    group_row: torch.Tensor  # [G]
    group_first_part: torch.Tensor  # [G]
    group_num_parts: torch.Tensor  # [G]
    num_items: int
    num_parts: int
    num_groups: int
    max_len: int  # entries of the longest item


def auto_chunk_blocks(total_blocks: int, num_slots: int, lo: int = 16, hi: int = 64) -> int:
    """Chunk size for ``total_blocks`` block products on ``num_slots`` resident programs.

    The largest power of two not above half the balanced work per slot, within ``[lo, hi]``: a
    longest-first schedule ends within ``balanced + longest item`` (Graham's bound), so items of at
    most half the balanced share keep the split rows off the critical path. ``lo = 16`` keeps
    ordinary BigBird rows (3 window + r random + 2 global blocks) whole; ``hi`` bounds the
    forward partials. E.g. H=12, BigBird-ITC, 528 slots (132 SMs x 4): 4K -> 16, 16K -> 16,
    64K -> 64 at batch 1. At 4K a longest-first schedule of the forward items then ends at about
    1.15x the balanced time, against 2.1x with chunks of 32 (a model; ``test_triton_schedule``).
    """
    share = total_blocks / max(num_slots, 1) / 2
    chunk = 1 << max(int(share).bit_length() - 1, 0)
    return max(lo, min(hi, chunk))


def build_work_plan(ptr: torch.Tensor, chunk: int, order: str = "head_major") -> WorkPlan:
    """Split every CSR row of ``ptr [R + 1]`` into items of at most ``chunk`` entries.

    Empty rows still get one (empty) item, so that their outputs are written (as zeros).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    ptr = ptr.to(torch.int64)
    lens = ptr[1:] - ptr[:-1]  # [R]
    num_rows = lens.numel()
    chunks_per_row = torch.clamp((lens + chunk - 1) // chunk, min=1)
    split_row = chunks_per_row > 1
    sizes = torch.stack([chunks_per_row.sum(), split_row.sum(), (chunks_per_row * split_row).sum(),
                         lens.max() if num_rows else lens.new_zeros(())])
    num_items, num_groups, num_parts, max_row = sizes.tolist()  # the plan's one host sync

    rows = torch.arange(num_rows, device=ptr.device)
    item_row = torch.repeat_interleave(rows, chunks_per_row, output_size=num_items)
    first_item = torch.cumsum(chunks_per_row, 0) - chunks_per_row
    k = torch.arange(num_items, device=ptr.device) - first_item[item_row]  # chunk number within its row
    item_start = ptr[item_row] + k * chunk
    item_end = torch.minimum(item_start + chunk, ptr[item_row + 1])

    is_split = split_row[item_row]
    item_part = torch.where(is_split, torch.cumsum(is_split.long(), 0) - 1, -1)
    group_of_row = torch.where(split_row, torch.cumsum(split_row.long(), 0) - 1, -1)
    item_group = group_of_row[item_row]
    group_row = rows[split_row]
    group_num_parts = chunks_per_row[split_row]
    group_first_part = torch.cumsum(group_num_parts, 0) - group_num_parts

    # Stable sorts keep head-major row order among equal keys.
    key = item_end - item_start
    if order == "head_major":
        key = torch.where(is_split, key, -1)  # split items first, longest first; then rows in order
    perm = torch.sort(key, descending=True, stable=True).indices
    i32 = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
    return WorkPlan(
        item_row=i32(item_row[perm]),
        item_start=i32(item_start[perm]),
        item_end=i32(item_end[perm]),
        item_part=i32(item_part[perm]),
        item_group=i32(item_group[perm]),
        group_row=i32(group_row),
        group_first_part=i32(group_first_part),
        group_num_parts=i32(group_num_parts),
        num_items=num_items,
        num_parts=num_parts,
        num_groups=num_groups,
        max_len=min(chunk, max_row),
    )


_plans: dict[tuple[int, int, str], tuple[weakref.ref, WorkPlan]] = {}


def _forget(key, ref) -> None:
    if _plans.get(key, (None,))[0] is ref:
        del _plans[key]


def cached_work_plan(ptr: torch.Tensor, chunk: int, order: str = "head_major") -> WorkPlan:
    """``build_work_plan`` memoised per ``ptr`` tensor, for as long as it lives.

    The entry holds a weak reference to ``ptr`` and is dropped when ``ptr`` is freed, so the cache
    grows with the layouts in use (12 layers x 3 padded lengths x 2 tables = 72 plans for a
    padded BigBird-base) and never evicts a live one. Mutating ``ptr`` in place is not detected
    (layouts are immutable).
    """
    key = (id(ptr), chunk, order)
    hit = _plans.get(key)
    if hit is not None and hit[0]() is ptr:
        return hit[1]
    plan = build_work_plan(ptr, chunk, order)
    _plans[key] = (weakref.ref(ptr, lambda ref, key=key: _forget(key, ref)), plan)
    return plan
