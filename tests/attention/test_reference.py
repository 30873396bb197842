"""Torch block-sparse backend vs. the dense masked reference, and the public entry point."""

import functools
import subprocess
import sys

import pytest
import torch

import bigbird_dna.attention as attention
from bigbird_dna.attention import (
    BlockLayout,
    block_sparse_attention,
    dense_reference_attention,
    num_blocks_for,
    preset,
    torch_block_sparse_attention,
)
from bigbird_dna.attention.torch_backend import DENSE_MAX_MASK_ELEMENTS, choose_method, row_groups
from bigbird_dna.errors import InputError

BLOCK = 16
PRESET_PARAMS = {
    "bigbird_itc": dict(window=3, num_random=3, global_per_end=1),
    "bigbird_etc": dict(num_global=1, window=3),
    "longformer": dict(window=5, num_global=1),
    "window_only": dict(window=3),
    "random_only": dict(num_random=3),
    "window_random": dict(window=3, num_random=2),
    "dense": dict(),
}


def qkv(batch, heads, seq, dim, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, seq, dim, generator=g, dtype=dtype).requires_grad_() for _ in range(3)]


def padding_mask(batch, seq):
    """Row 0 is full; row b keeps its first ``seq - 37*b`` tokens (ends mid-block)."""
    lengths = torch.tensor([seq - 37 * i for i in range(batch)])
    return torch.arange(seq)[None, :] < lengths[:, None]


def outputs_and_grads(fn, q, k, v, layout, mask, **kw):
    out = fn(q, k, v, layout, mask, **kw)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=out.dtype)
    return (out, *torch.autograd.grad(out, (q, k, v), grad_out))


def assert_matches_reference(q, k, v, layout, mask, atol=1e-5, method="auto", **kw):
    got = outputs_and_grads(torch_block_sparse_attention, q, k, v, layout, mask, method=method, **kw)
    want = outputs_and_grads(dense_reference_attention, q, k, v, layout, mask, **kw)
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        torch.testing.assert_close(a, b, atol=atol, rtol=1e-5, msg=f"{name} differs")


METHODS = ["gather", "dense"]  # the torch backend's two ways; "auto" picks one of them


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(PRESET_PARAMS))
@pytest.mark.parametrize("seq, dim", [(250, 8), (224, 32)])
def test_torch_backend_matches_dense_reference_for_every_preset(name, seq, dim, method):
    pattern = preset(name, **PRESET_PARAMS[name])
    nb = num_blocks_for(seq, BLOCK)
    layout = pattern.build(2, nb - pattern.prepend, BLOCK, seed=1, layer=2)
    q, k, v = qkv(3, 2, seq, dim)
    assert_matches_reference(q, k, v, layout, padding_mask(3, seq), method=method)
    assert_matches_reference(q, k, v, layout, None, method=method)


@pytest.mark.parametrize("method", METHODS)
def test_torch_backend_handles_ragged_custom_layouts(method):
    """Rows of very different lengths, heads that differ, an empty row and a full row."""
    heads, seq = 3, 200
    nb = num_blocks_for(seq, BLOCK)
    mask = torch.rand(heads, nb, nb, generator=torch.Generator().manual_seed(3)) < 0.2
    mask[0, 2] = False
    mask[1, 4] = True
    mask[2, :, 7] = True
    layout = BlockLayout.from_block_mask(mask, BLOCK)
    q, k, v = qkv(2, heads, seq, 8)
    assert_matches_reference(q, k, v, layout, padding_mask(2, seq), method=method)
    assert torch_block_sparse_attention(q, k, v, layout, method=method)[:, 0, 2 * BLOCK:3 * BLOCK].eq(0).all()


def test_auto_takes_the_dense_path_only_for_dense_enough_short_layouts():
    """BigBird at 16 blocks covers about half the grid (dense is faster); at 128 blocks about 8%,
    where the gathered path keeps memory linear in T. A padded batch needs a mask per sequence."""
    itc = preset("bigbird_itc")
    assert choose_method(itc.build(4, 16, 32), batch=32, padded_keys=False) == "dense"
    assert choose_method(preset("dense").build(4, 10, 32), batch=32, padded_keys=True) == "dense"
    assert choose_method(itc.build(4, 128, 32), batch=1, padded_keys=False) == "gather"
    nb = 16
    too_many = DENSE_MAX_MASK_ELEMENTS // (4 * nb * nb * 32 * 32) + 1  # sequences whose masks pass the cap
    assert choose_method(itc.build(4, nb, 32), batch=too_many, padded_keys=True) == "gather"
    assert choose_method(itc.build(4, nb, 32), batch=too_many, padded_keys=False) == "dense"
    with pytest.raises(InputError, match="unknown torch attention method"):
        q, k, v = qkv(1, 4, 16 * 32, 8)
        torch_block_sparse_attention(q, k, v, itc.build(4, 16, 32), method="flash")


@pytest.mark.parametrize("nb", [16, 64])  # at 16 a global row is exactly twice a window row
def test_row_groups_keep_global_rows_apart_and_pad_little(nb):
    heads = 2
    layout = preset("bigbird_itc").build(heads, nb, BLOCK)
    groups = row_groups(layout)
    assert groups[0].tolist() == [0, nb - 1, nb, 2 * nb - 1], "global query rows (every block) first, alone"
    assert sorted(torch.cat(groups).tolist()) == list(range(heads * nb)), "every row exactly once"
    lengths = layout.row_lengths()
    for rows in groups:
        assert lengths[rows].min() >= 0.75 * lengths[rows].max(), "a group pads a row by more than 25%"
    assert len(row_groups(preset("dense").build(heads, nb, BLOCK))) == 1


def test_rows_of_one_length_are_one_group_and_empty_rows_none():
    mask = torch.eye(6, dtype=torch.bool)[None].clone()
    mask[0, 3, 3] = False  # row 3 attends to nothing
    groups = row_groups(BlockLayout.from_block_mask(mask, BLOCK))
    assert [g.tolist() for g in groups] == [[0, 1, 2, 4, 5]]


@pytest.mark.parametrize("method", METHODS)
def test_padded_queries_and_rows_without_keys_output_exact_zeros(method):
    seq = 6 * BLOCK
    mask = torch.eye(6, dtype=torch.bool)[None]
    mask[0, 2, 2], mask[0, 2, 5] = False, True  # block 2 attends only to block 5, which is padding
    layout = BlockLayout.from_block_mask(mask, BLOCK)
    q, k, v = qkv(1, 1, seq, 8)
    keep = torch.arange(seq)[None, :] < 5 * BLOCK
    for fn in (functools.partial(torch_block_sparse_attention, method=method), dense_reference_attention):
        out, dq, dk, dv = outputs_and_grads(fn, q, k, v, layout, keep)
        assert out[0, 0, 5 * BLOCK:].eq(0).all(), "padding query rows"
        assert out[0, 0, 2 * BLOCK:3 * BLOCK].eq(0).all(), "row with only padding keys"
        assert out[0, 0, :2 * BLOCK].ne(0).any()
        assert all(torch.isfinite(g).all() for g in (dq, dk, dv))


@pytest.mark.parametrize("name", ["bigbird_itc", "dense"])
def test_dense_reference_agrees_with_sdpa(name):
    seq = 200
    layout = preset(name, **PRESET_PARAMS[name]).build(2, num_blocks_for(seq, BLOCK), BLOCK)
    q, k, v = qkv(2, 2, seq, 16)
    allowed = layout.to_block_mask().repeat_interleave(BLOCK, 1).repeat_interleave(BLOCK, 2)[:, :seq, :seq]
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=allowed[None])
    torch.testing.assert_close(dense_reference_attention(q, k, v, layout), want, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("method", METHODS)
def test_explicit_scale_is_used(method):
    seq = 160
    layout = preset("bigbird_itc").build(2, num_blocks_for(seq, BLOCK), BLOCK)
    q, k, v = qkv(1, 2, seq, 8)
    assert_matches_reference(q, k, v, layout, None, scale=0.3, method=method)
    unscaled = torch_block_sparse_attention(q, k, v, layout, method=method)
    assert not torch.allclose(torch_block_sparse_attention(q, k, v, layout, scale=0.3, method=method), unscaled)


@pytest.mark.parametrize("method", METHODS)
def test_float64_gradcheck(method):
    seq, block = 22, 4
    layout = preset("bigbird_itc", num_random=1).build(1, num_blocks_for(seq, block), block)
    q, k, v = qkv(1, 1, seq, 3, dtype=torch.float64)
    keep = torch.arange(seq)[None, :] < 19
    def attend(*tensors):
        return torch_block_sparse_attention(*tensors, layout, keep, method=method)

    assert torch.autograd.gradcheck(attend, (q, k, v), fast_mode=True)


def test_bfloat16_inputs_return_bfloat16():
    seq = 192
    layout = preset("bigbird_itc").build(2, num_blocks_for(seq, BLOCK), BLOCK)
    q, k, v = qkv(1, 2, seq, 16, dtype=torch.bfloat16)
    out = block_sparse_attention(q, k, v, layout, backend="torch")
    assert out.dtype == torch.bfloat16
    torch.testing.assert_close(out, dense_reference_attention(q, k, v, layout), atol=2e-2, rtol=2e-2)


def test_auto_backend_on_cpu_uses_torch():
    seq = 100
    layout = preset("window_random").build(2, num_blocks_for(seq, BLOCK), BLOCK)
    q, k, v = qkv(2, 2, seq, 8)
    mask = padding_mask(2, seq)
    assert torch.equal(block_sparse_attention(q, k, v, layout, mask),
                       torch_block_sparse_attention(q, k, v, layout, mask))


def test_triton_backend_on_cpu_without_interpreter_raises(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    monkeypatch.setattr(attention, "triton_available", lambda: True)
    layout = preset("window_only").build(1, 2, BLOCK)
    q, k, v = qkv(1, 1, 2 * BLOCK, 8)
    with pytest.raises(InputError, match="TRITON_INTERPRET=1"):
        block_sparse_attention(q, k, v, layout, backend="triton")


def test_triton_backend_without_triton_installed_raises(monkeypatch):
    monkeypatch.setattr(attention, "triton_available", lambda: False)
    layout = preset("window_only").build(1, 2, BLOCK)
    q, k, v = qkv(1, 1, 2 * BLOCK, 8)
    with pytest.raises(InputError, match="needs the triton package"):
        block_sparse_attention(q, k, v, layout, backend="triton")
    assert block_sparse_attention(q, k, v, layout, backend="auto").shape == q.shape


def test_package_imports_without_triton():
    code = ("import sys; sys.modules['triton'] = None; import bigbird_dna.attention as a; "
            "assert not a.triton_available()")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("change, message", [
    (dict(backend="cuda"), "unknown attention backend"),
    (dict(heads=3), "does not fit"),
    (dict(seq=5 * BLOCK), "does not fit"),
    (dict(key_padding_mask=torch.ones(1, 3 * BLOCK)), "key_padding_mask must be bool"),
])
def test_mismatched_inputs_raise_input_error(change, message):
    layout = preset("window_only").build(2, 3, BLOCK)
    q, k, v = qkv(1, change.get("heads", 2), change.get("seq", 3 * BLOCK), 8)
    with pytest.raises(InputError, match=message):
        block_sparse_attention(q, k, v, layout, change.get("key_padding_mask"),
                               backend=change.get("backend", "torch"))


@pytest.mark.parametrize("name", ["bigbird_itc", "window_random", "longformer"])
def test_attend_query_rows_equals_the_full_output_at_those_rows(name):
    """Every query computed, then sliced, against only the chosen queries; with padded keys, a
    padded query row and (custom layout) a row without keys."""
    from bigbird_dna.attention.torch_backend import attend_query_rows

    seq = 250
    layout = preset(name, **PRESET_PARAMS[name]).build(2, num_blocks_for(seq, BLOCK), BLOCK, seed=1)
    q, k, v = qkv(3, 2, seq, 8)
    mask = padding_mask(3, seq)
    rows = torch.tensor([0, 5, 100, 249])  # 249 is padding in sequences 1 and 2
    want = dense_reference_attention(q, k, v, layout, mask)[:, :, rows]
    got = attend_query_rows(q[:, :, rows], k, v, layout, rows, key_padding_mask=mask)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    assert got[1:, :, 3].eq(0).all()
    empty = torch.eye(num_blocks_for(seq, BLOCK), dtype=torch.bool)[None].repeat(2, 1, 1)
    empty[0, 0, 0] = False
    custom = BlockLayout.from_block_mask(empty, BLOCK)
    got = attend_query_rows(q[:, :, rows], k, v, custom, rows)
    torch.testing.assert_close(got, dense_reference_attention(q, k, v, custom)[:, :, rows], atol=1e-5, rtol=1e-5)
    assert got[:, 0, 0].eq(0).all(), "a row without keys outputs 0"
