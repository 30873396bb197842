"""Triton block-sparse kernels vs. the dense fp64 reference: outputs and dQ, dK, dV.

Without CUDA these run under the Triton interpreter on CPU (see ``conftest.py``), which costs
~5-10 ms per (block pair, pass): sizes are kept at 12 blocks or fewer, 1-2 heads. The reference
tests run for both ways of reading the block indices (``index_mode`` "loop" and "preload"). The
interpreter cannot do bf16 ``tl.dot`` (it multiplies the raw bit patterns;
triton-lang/triton#11584), so bf16 runs only on a GPU. What the interpreter cannot see is covered
by compiling every kernel for sm_90 and sm_80 (``test_triton_compile.py``, no GPU needed).
Full-size checks are marked ``gpu``.
"""
import os

import numpy as np
import pytest
import torch

pytest.importorskip("triton")

from bigbird_dna.attention import (  # noqa: E402
    BlockLayout,
    block_sparse_attention,
    dense_reference_attention,
    preset,
)
from bigbird_dna.attention.triton_kernels import (  # noqa: E402
    INDEX_MODES,
    VARIANTS,
    KernelOptions,
    triton_block_sparse_attention,
)
from bigbird_dna.attention.triton_launch import _index_from_data  # noqa: E402
from bigbird_dna.attention.triton_schedule import cached_work_plan  # noqa: E402
from bigbird_dna.errors import InputError  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRETED or not torch.cuda.is_available() else "cuda"
pytestmark = pytest.mark.skipif(DEVICE == "cpu" and not INTERPRETED,
                                reason="needs CUDA or TRITON_INTERPRET=1")
TOLERANCES = {  # (atol, rtol) against the fp64 reference computed from the same (rounded) inputs
    torch.float32: (2e-5, 1e-4),
    torch.float16: (2e-3, 5e-3),
    torch.bfloat16: (2e-2, 2e-2),
}
PRESET_PARAMS = {
    "bigbird_itc": dict(window=3, num_random=3, global_per_end=1),
    "bigbird_etc": dict(num_global=1, window=3),
    "longformer": dict(window=3, num_global=1),
    "window_only": dict(window=3),
    "random_only": dict(num_random=3),
    "window_random": dict(window=3, num_random=2),
    "dense": dict(),
}
both_index_modes = pytest.mark.parametrize("index_mode", INDEX_MODES)


def make_layout(name, num_blocks, block_size, heads, **params):
    pattern = preset(name, **(params or PRESET_PARAMS[name]))
    return pattern.build(heads, num_blocks, block_size, seed=3, layer=1, device=DEVICE)


def make_qkv(batch, heads, seq, dim, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, seq, dim, generator=g).to(DEVICE, dtype).requires_grad_() for _ in range(3)]


def padding_mask(lengths, seq):
    """Bool [B, T]: sequence b keeps its first ``lengths[b]`` tokens."""
    return torch.arange(seq, device=DEVICE)[None, :] < torch.tensor(lengths, device=DEVICE)[:, None]


def outputs_and_grads(fn, q, k, v, layout, mask, grad_out, **kw):
    out = fn(q, k, v, layout, mask, **kw)
    return (out, *torch.autograd.grad(out, (q, k, v), grad_out.to(out.dtype)))


def check_against_reference(layout, q, k, v, mask=None, index_mode="loop", merge="launch", dq="kernel", **kw):
    """Assert Triton's (out, dq, dk, dv) match the fp64 dense reference; return Triton's."""
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    got = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, mask, grad_out,
                            options=KernelOptions(index_mode=index_mode, merge=merge, dq=dq), **kw)
    ref_inputs = [x.detach().double().requires_grad_() for x in (q, k, v)]
    scale = kw.get("scale")
    want = outputs_and_grads(dense_reference_attention, *ref_inputs, layout, mask, grad_out, scale=scale)
    atol, rtol = TOLERANCES[q.dtype]
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        assert a.dtype == q.dtype and a.shape == q.shape
        torch.testing.assert_close(a.double(), b, atol=atol, rtol=rtol, msg=lambda m, n=name: f"{n}: {m}")
    return got


# --- correctness against the reference ------------------------------------------------------------

@pytest.mark.parametrize("name", list(PRESET_PARAMS))
@both_index_modes
def test_matches_reference_for_every_preset_with_partial_last_block(name, index_mode):
    block, heads = 16, 2
    layout = make_layout(name, 11 if name == "bigbird_etc" else 12, block, heads)  # ETC prepends 1 block
    seq = layout.num_q_blocks * block - 5
    check_against_reference(layout, *make_qkv(1, heads, seq, 32), index_mode=index_mode)


@pytest.mark.parametrize("dim", [32, 64])
@both_index_modes
def test_padded_batch_matches_reference_and_zeroes_padding(dim, index_mode):
    block, seq = 32, 12 * 32
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    q, k, v = make_qkv(2, 1, seq, dim)
    mask = padding_mask([seq, seq - 77], seq)  # the second sequence ends mid-block
    out, dq, dk, dv = check_against_reference(layout, q, k, v, mask, index_mode=index_mode)
    for grad in (out, dq, dk, dv):
        assert torch.all(grad[1, :, seq - 77:] == 0)


@both_index_modes
def test_fully_padded_sequence_outputs_zero_without_nan(index_mode):
    layout = make_layout("window_only", 4, 16, heads=1)
    q, k, v = make_qkv(2, 1, 60, 32)
    mask = padding_mask([45, 0], 60)
    out, dq, dk, dv = check_against_reference(layout, q, k, v, mask, index_mode=index_mode)
    for t in (out, dq, dk, dv):
        assert torch.all(t[1] == 0)


@both_index_modes
def test_custom_block_mask_with_empty_rows_and_columns_and_explicit_scale(index_mode):
    g = torch.Generator().manual_seed(5)
    block_mask = torch.rand(2, 8, 8, generator=g) < 0.4
    block_mask[0, 3, :] = False  # query block 3 of head 0 attends to nothing
    block_mask[1, :, 5] = False  # key block 5 of head 1 is attended by nobody
    layout = BlockLayout.from_block_mask(block_mask.to(DEVICE), block_size=16)
    q, k, v = make_qkv(1, 2, 8 * 16 - 3, 64)
    out, dq, dk, dv = check_against_reference(layout, q, k, v, scale=0.3, index_mode=index_mode)
    assert torch.all(out[0, 0, 48:64] == 0) and torch.all(dq[0, 0, 48:64] == 0)
    assert torch.all(dk[0, 1, 80:96] == 0) and torch.all(dv[0, 1, 80:96] == 0)


@pytest.mark.parametrize("name", ["bigbird_itc", "bigbird_etc", "window_random", "dense"])
def test_atomic_dq_matches_reference_with_partial_blocks_and_padding(name):
    """dq="atomic": the dK/dV kernel adds dS K into fp32 rows, for every query block a key block sees."""
    block, heads = 16, 2
    layout = make_layout(name, 11 if name == "bigbird_etc" else 12, block, heads)
    seq = layout.num_q_blocks * block - 5
    q, k, v = make_qkv(2, heads, seq, 32)
    check_against_reference(layout, q, k, v, padding_mask([seq, seq - 37], seq), index_mode="preload",
                            merge="fused", dq="atomic", chunk_blocks=3)


@pytest.mark.parametrize("chunk_blocks", [1, 3])
@both_index_modes
@pytest.mark.parametrize("merge", ["launch", "fused"])
def test_split_global_rows_and_columns_merge_to_reference(chunk_blocks, index_mode, merge):
    """With chunks of 3 the 12-block global rows and key columns are split in 4 and merged."""
    block, seq = 16, 12 * 16 - 9
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    assert cached_work_plan(layout.kv_ptr, chunk_blocks).num_groups >= 2
    assert cached_work_plan(layout.q_ptr, chunk_blocks).num_groups >= 2
    q, k, v = make_qkv(1, 1, seq, 32)
    check_against_reference(layout, q, k, v, padding_mask([seq - 40], seq), chunk_blocks=chunk_blocks,
                            index_mode=index_mode, merge=merge)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@both_index_modes
def test_half_precision_matches_reference(dtype, index_mode):
    if dtype == torch.bfloat16 and INTERPRETED:
        pytest.skip("the Triton interpreter cannot run bf16 tl.dot (triton-lang/triton#11584)")
    block, seq = 64, 12 * 64 - 10
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    q, k, v = make_qkv(2, 1, seq, 64, dtype=dtype)
    check_against_reference(layout, q, k, v, padding_mask([seq, seq - 100], seq), chunk_blocks=4,
                            index_mode=index_mode)


@pytest.mark.parametrize("block, dim", [(64, 128), (128, 32)])
@both_index_modes
def test_large_blocks_and_head_dims_match_reference(block, dim, index_mode):
    layout = make_layout("window_random", 4, block, heads=1, window=1, num_random=1)
    check_against_reference(layout, *make_qkv(1, 1, 4 * block - 7, dim), index_mode=index_mode)


# --- behaviour -------------------------------------------------------------------------------------

def test_strided_inputs_give_the_same_result_as_contiguous_ones():
    layout = make_layout("window_only", 4, 16, heads=2)
    q, k, v = make_qkv(1, 2, 64, 32)
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    want = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, None, grad_out)
    strided = [x.detach().transpose(1, 2).contiguous().transpose(1, 2).requires_grad_() for x in (q, k, v)]
    assert strided[0].stride(-1) == 1 and not strided[0].is_contiguous()
    got = outputs_and_grads(triton_block_sparse_attention, *strided, layout, None, grad_out)
    for a, b in zip(got, want):
        assert torch.equal(a, b)
    assert got[0].stride() == strided[0].stride()


def test_backward_is_bitwise_deterministic_when_nothing_is_split():
    layout = make_layout("bigbird_itc", 12, 16, heads=1)
    q, k, v = make_qkv(1, 1, 12 * 16, 32)
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    assert cached_work_plan(layout.q_ptr, 32).num_groups == 0
    runs = [outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, None, grad_out, chunk_blocks=32)
            for _ in range(2)]
    for a, b in zip(*runs):
        assert torch.equal(a, b)


def test_public_entry_point_dispatches_to_triton():
    layout = make_layout("window_only", 3, 16, heads=1)
    q, k, v = make_qkv(1, 1, 40, 16)
    got = block_sparse_attention(q, k, v, layout, backend="triton")
    assert torch.equal(got, triton_block_sparse_attention(q, k, v, layout))


@pytest.mark.parametrize("dim, block, dtype", [(48, 16, torch.float32), (32, 8, torch.float32),
                                               (32, 16, torch.float64)])
def test_rejects_unsupported_shapes_and_dtypes(dim, block, dtype):
    layout = make_layout("window_only", 2, block, heads=1)
    q, k, v = make_qkv(1, 1, 2 * block, dim, dtype=dtype)
    with pytest.raises(InputError):
        triton_block_sparse_attention(q, k, v, layout)


@pytest.mark.parametrize("options", [dict(chunk_blocks=0), dict(options="no-such-variant"),
                                     dict(options=dict(index_mode="unrolled")), dict(options=dict(order="random")),
                                     dict(options=dict(merge="atomic"))])
def test_rejects_unknown_launch_options(options):
    layout = make_layout("window_only", 2, 16, heads=1)
    q, k, v = make_qkv(1, 1, 32, 16)
    if isinstance(options.get("options"), dict):
        with pytest.raises(InputError):
            KernelOptions(**options["options"])
        return
    with pytest.raises(InputError):
        triton_block_sparse_attention(q, k, v, layout, **options)


def test_benchmark_lists_every_named_variant():
    from benchmarks.attention import VARIANT_NAMES

    assert set(VARIANT_NAMES) == set(VARIANTS)


def test_every_named_variant_gives_the_same_output():
    layout = make_layout("bigbird_itc", 12, 16, heads=1)
    q, k, v = make_qkv(1, 1, 12 * 16 - 3, 16)
    want = triton_block_sparse_attention(q, k, v, layout, options="v0")
    for name in VARIANTS:
        torch.testing.assert_close(triton_block_sparse_attention(q, k, v, layout, options=name), want,
                                   atol=1e-6, rtol=1e-5, msg=lambda m, n=name: f"{n}: {m}")


def test_interpreter_loop_bounds_convert_one_element_arrays_for_numpy_2_4():
    """Triton < 3.7's interpreter did ``int(handle.data)``, which numpy >= 2.4 refuses for 1-d arrays."""
    assert _index_from_data(np.array([7], dtype=np.int32)) == 7
    assert _index_from_data(np.array(5, dtype=np.int64)) == 5
    from triton.runtime import interpreter

    class Scope:
        def set_attr(self, obj, name, value):
            setattr(obj, name, value)

    class Handle:
        data = np.array([3], dtype=np.int32)

    class Tensor:
        handle = Handle()

    assert getattr(interpreter._patch_lang_tensor, "_bigbird_index_fix", False)
    interpreter._patch_lang_tensor(Tensor, Scope())
    assert range(Tensor(), 5) == range(3, 5)
