"""Work lists for the block-sparse Triton kernels: CSR rows split into bounded chunks.

A CSR table (``ptr [R + 1]``, one row per (layout head, block)) becomes a list of work items,
one Triton program each. A row with more than ``chunk`` entries (a BigBird global query row in the
forward table, a global key column in the transposed table) is split into several items whose
results are merged afterwards, so that no program is a straggler. Items are ordered
longest-first (LPT), ties in head-major row order for L2 locality.

Building a plan needs one host sync (the number of items sizes the grid); plans are cached by
the identity of the ``ptr`` tensor, so repeated calls with the same layout run sync-free.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

_CACHE_SIZE = 64


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


def build_work_plan(ptr: torch.Tensor, chunk: int) -> WorkPlan:
    """Split every CSR row of ``ptr`` into items of at most ``chunk`` entries.

    Empty rows still get one (empty) item, so that their outputs are written (as zeros).
    """
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    ptr = ptr.to(torch.int64)
    lens = ptr[1:] - ptr[:-1]  # [R]
    num_rows = lens.numel()
    chunks_per_row = torch.clamp((lens + chunk - 1) // chunk, min=1)
    split_row = chunks_per_row > 1
    sizes = torch.stack([chunks_per_row.sum(), split_row.sum(), (chunks_per_row * split_row).sum()])
    num_items, num_groups, num_parts = sizes.tolist()  # the plan's one host sync

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

    # Longest first; a stable sort keeps head-major order among equal lengths.
    order = torch.sort(item_end - item_start, descending=True, stable=True).indices
    i32 = lambda t: t.to(torch.int32).contiguous()  # noqa: E731
    return WorkPlan(
        item_row=i32(item_row[order]),
        item_start=i32(item_start[order]),
        item_end=i32(item_end[order]),
        item_part=i32(item_part[order]),
        item_group=i32(item_group[order]),
        group_row=i32(group_row),
        group_first_part=i32(group_first_part),
        group_num_parts=i32(group_num_parts),
        num_items=num_items,
        num_parts=num_parts,
        num_groups=num_groups,
    )


_plans: OrderedDict[tuple[int, int], tuple[torch.Tensor, WorkPlan]] = OrderedDict()


def cached_work_plan(ptr: torch.Tensor, chunk: int) -> WorkPlan:
    """``build_work_plan`` memoised on the identity of ``ptr`` (small LRU).

    The cache keeps ``ptr`` alive, so its ``id`` cannot be reused while the entry exists.
    Mutating ``ptr`` in place is not detected (layouts are treated as immutable).
    """
    key = (id(ptr), chunk)
    hit = _plans.get(key)
    if hit is not None and hit[0] is ptr:
        _plans.move_to_end(key)
        return hit[1]
    plan = build_work_plan(ptr, chunk)
    _plans[key] = (ptr, plan)
    if len(_plans) > _CACHE_SIZE:
        _plans.popitem(last=False)
    return plan
