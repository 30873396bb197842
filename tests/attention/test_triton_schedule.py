"""Work plans of the Triton kernels: splitting, order, chunk sizing and the plan cache."""
import gc
import heapq

import pytest
import torch

pytest.importorskip("triton")

from bigbird_dna.attention import (  # noqa: E402
    layout_for,
    preset,
    triton_schedule,  # noqa: E402
)
from bigbird_dna.attention.triton_schedule import auto_chunk_blocks, build_work_plan, cached_work_plan  # noqa: E402
from tests.attention.test_triton_kernels import DEVICE, INTERPRETED, make_layout, make_qkv  # noqa: E402

ITC = dict(window=3, num_random=3, global_per_end=1)


def spans_of(plan, row):
    mine = plan.item_row == row
    return sorted(zip(plan.item_start[mine].tolist(), plan.item_end[mine].tolist()))


@pytest.mark.parametrize("order", ["head_major", "lpt"])
def test_work_plan_splits_long_rows_into_bounded_contiguous_chunks(order):
    ptr = torch.tensor([0, 3, 3, 13, 15], dtype=torch.int32)  # rows of length 3, 0, 10, 2
    plan = build_work_plan(ptr, chunk=4, order=order)
    lengths = plan.item_end - plan.item_start
    assert plan.num_items == 6 and lengths.max() <= 4 and plan.max_len == 4
    assert plan.item_row[lengths == 0].tolist() == [1]  # the empty row still gets its item
    for row in range(4):
        spans = spans_of(plan, row)
        assert spans[0][0] == ptr[row] and spans[-1][1] == ptr[row + 1]
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert plan.group_row.tolist() == [2] and plan.group_num_parts.tolist() == [3]
    split = plan.item_row == 2
    assert sorted(plan.item_part[split].tolist()) == [0, 1, 2] and set(plan.item_group[split].tolist()) == {0}
    assert set(plan.item_part[~split].tolist()) == {-1} and set(plan.item_group[~split].tolist()) == {-1}
    if order == "lpt":
        assert lengths.tolist() == [4, 4, 3, 2, 2, 0]  # longest first, ties in row order
    else:  # the split row's items first, longest first; then the whole rows in row order
        assert plan.item_row.tolist() == [2, 2, 2, 0, 1, 3] and lengths.tolist() == [4, 4, 2, 3, 0, 2]


def test_head_major_order_keeps_each_heads_whole_columns_together():
    """The transposed table's in-degrees vary with the random blocks; LPT interleaves heads there."""
    layout = layout_for("bigbird_itc", num_heads=4, num_blocks=64, block_size=16, layer=0, seed=0, **ITC)
    heads = {}
    for order in ("head_major", "lpt"):
        plan = build_work_plan(layout.q_ptr, 16, order)
        whole = plan.item_group < 0
        head = (plan.item_row[whole] // layout.num_k_blocks).tolist()
        heads[order] = sum(a != b for a, b in zip(head, head[1:]))  # head switches along the order
        assert (plan.item_group[: int((~whole).sum())] >= 0).all()  # split items come first
    assert heads["head_major"] == 3 and heads["lpt"] > 10 * heads["head_major"]


def lpt_makespan(plan, batch: int, slots: int, overhead: float = 1.0) -> float:
    """Model: programs start in grid order on ``slots`` identical slots; an item costs its blocks
    plus ``overhead`` (loading Q, writing O)."""
    costs = [length + overhead for length in (plan.item_end - plan.item_start).tolist() for _ in range(batch)]
    free = [0.0] * slots
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


@pytest.mark.parametrize("seq, batch, want", [(4096, 1, 16), (16384, 1, 16), (65536, 1, 64), (4096, 16, 64)])
def test_chunk_size_follows_total_work_and_keeps_global_rows_off_the_critical_path(seq, batch, want):
    slots = 132 * 4  # an H100's SMs x resident forward programs
    layout = layout_for("bigbird_itc", num_heads=12, num_blocks=seq // 64, block_size=64, layer=0, seed=0, **ITC)
    chunk = auto_chunk_blocks(batch * layout.nnz, slots)
    assert chunk == want
    if seq == 4096 and batch == 1:
        balanced = (layout.nnz + build_work_plan(layout.kv_ptr, chunk).num_items) / slots
        modelled = {c: lpt_makespan(build_work_plan(layout.kv_ptr, c), 1, slots) / balanced for c in (16, 32)}
        assert modelled[16] < 1.3 < modelled[32], modelled


def test_plan_cache_holds_every_live_layout_of_a_padded_12_layer_model():
    """3 padded lengths x 12 layers x 2 tables = 72 plans: all stay cached (an LRU of 64 thrashed)."""
    pattern = preset("bigbird_itc", **ITC)
    layouts = [pattern.build(2, blocks, 16, seed=0, layer=layer, device=DEVICE)
               for blocks in (12, 13, 14) for layer in range(12)]
    tables = [t for layout in layouts for t in (layout.kv_ptr, layout.q_ptr)]
    first = [cached_work_plan(t, 16) for t in tables]
    assert all(cached_work_plan(t, 16) is plan for t, plan in zip(tables, first))
    assert cached_work_plan(tables[0], 8) is not first[0]
    assert cached_work_plan(tables[0].clone(), 16) is not first[0]


def test_plan_cache_forgets_a_table_once_it_is_freed():
    ptr = torch.tensor([0, 3, 5], dtype=torch.int32)
    cached_work_plan(ptr, 4)
    assert any(ref() is ptr for ref, _ in triton_schedule._plans.values())
    before = len(triton_schedule._plans)
    del ptr
    gc.collect()
    assert len(triton_schedule._plans) == before - 1


@pytest.mark.skipif(DEVICE == "cpu" and not INTERPRETED, reason="needs CUDA or TRITON_INTERPRET=1")
def test_a_second_call_with_the_same_layout_builds_no_plan(monkeypatch):
    """Plan building is the only host sync; cached plans make later calls sync-free (and graph-capturable)."""
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    built = []
    original = triton_schedule.build_work_plan
    monkeypatch.setattr(triton_schedule, "build_work_plan", lambda *a, **k: built.append(a) or original(*a, **k))
    layout = make_layout("bigbird_itc", 12, 16, heads=1)
    q, k, v = make_qkv(1, 1, 12 * 16, 16)
    triton_block_sparse_attention(q, k, v, layout, chunk_blocks=4).sum().backward()
    assert len(built) == 2  # the forward table and the transposed one
    triton_block_sparse_attention(q, k, v, layout, chunk_blocks=4).sum().backward()
    assert len(built) == 2
