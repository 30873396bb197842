"""Triton block-sparse kernels vs. the dense fp64 reference: outputs and dQ, dK, dV.

Without CUDA these run under the Triton interpreter on CPU (see ``conftest.py``), which costs
~5-10 ms per (block pair, pass): sizes are kept at 12 blocks or fewer, 1-2 heads. The interpreter
cannot do bf16 ``tl.dot`` (it multiplies the raw bit patterns; triton-lang/triton#11584), so bf16
runs only on a GPU. What the interpreter cannot see is covered by compiling every kernel for sm_90
and sm_80 (no GPU needed). Full-size checks are marked ``gpu``.
"""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton")

from bigbird_dna.attention import (  # noqa: E402
    BlockLayout,
    block_sparse_attention,
    dense_reference_attention,
    num_blocks_for,
    preset,
    torch_block_sparse_attention,
)
from bigbird_dna.attention.triton_kernels import (  # noqa: E402
    _launch_config,
    triton_block_sparse_attention,
)
from bigbird_dna.attention.triton_schedule import build_work_plan, cached_work_plan  # noqa: E402
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


def check_against_reference(layout, q, k, v, mask=None, **kw):
    """Assert Triton's (out, dq, dk, dv) match the fp64 dense reference; return Triton's."""
    grad_out = torch.randn(q.shape, generator=torch.Generator().manual_seed(1)).to(DEVICE)
    got = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, mask, grad_out, **kw)
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
def test_matches_reference_for_every_preset_with_partial_last_block(name):
    block, heads = 16, 2
    layout = make_layout(name, 11 if name == "bigbird_etc" else 12, block, heads)  # ETC prepends 1 block
    seq = layout.num_q_blocks * block - 5
    check_against_reference(layout, *make_qkv(1, heads, seq, 32))


@pytest.mark.parametrize("dim", [32, 64])
def test_padded_batch_matches_reference_and_zeroes_padding(dim):
    block, seq = 32, 12 * 32
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    q, k, v = make_qkv(2, 1, seq, dim)
    mask = padding_mask([seq, seq - 77], seq)  # the second sequence ends mid-block
    out, dq, dk, dv = check_against_reference(layout, q, k, v, mask)
    for grad in (out, dq, dk, dv):
        assert torch.all(grad[1, :, seq - 77:] == 0)


def test_fully_padded_sequence_outputs_zero_without_nan():
    layout = make_layout("window_only", 4, 16, heads=1)
    q, k, v = make_qkv(2, 1, 60, 32)
    mask = padding_mask([45, 0], 60)
    out, dq, dk, dv = check_against_reference(layout, q, k, v, mask)
    for t in (out, dq, dk, dv):
        assert torch.all(t[1] == 0)


def test_custom_block_mask_with_empty_rows_and_columns_and_explicit_scale():
    g = torch.Generator().manual_seed(5)
    block_mask = torch.rand(2, 8, 8, generator=g) < 0.4
    block_mask[0, 3, :] = False  # query block 3 of head 0 attends to nothing
    block_mask[1, :, 5] = False  # key block 5 of head 1 is attended by nobody
    layout = BlockLayout.from_block_mask(block_mask.to(DEVICE), block_size=16)
    q, k, v = make_qkv(1, 2, 8 * 16 - 3, 64)
    out, dq, dk, dv = check_against_reference(layout, q, k, v, scale=0.3)
    assert torch.all(out[0, 0, 48:64] == 0) and torch.all(dq[0, 0, 48:64] == 0)
    assert torch.all(dk[0, 1, 80:96] == 0) and torch.all(dv[0, 1, 80:96] == 0)


@pytest.mark.parametrize("chunk_blocks", [1, 3])
def test_split_global_rows_and_columns_merge_to_reference(chunk_blocks):
    """With chunks of 3 the 12-block global rows and key columns are split in 4 and merged."""
    block, seq = 16, 12 * 16 - 9
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    assert cached_work_plan(layout.kv_ptr, chunk_blocks).num_groups >= 2
    assert cached_work_plan(layout.q_ptr, chunk_blocks).num_groups >= 2
    q, k, v = make_qkv(1, 1, seq, 32)
    check_against_reference(layout, q, k, v, padding_mask([seq - 40], seq), chunk_blocks=chunk_blocks)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_matches_reference(dtype):
    if dtype == torch.bfloat16 and INTERPRETED:
        pytest.skip("the Triton interpreter cannot run bf16 tl.dot (triton-lang/triton#11584)")
    block, seq = 64, 12 * 64 - 10
    layout = make_layout("bigbird_itc", 12, block, heads=1)
    q, k, v = make_qkv(2, 1, seq, 64, dtype=dtype)
    check_against_reference(layout, q, k, v, padding_mask([seq, seq - 100], seq), chunk_blocks=4)


@pytest.mark.parametrize("block, dim", [(64, 128), (128, 32)])
def test_large_blocks_and_head_dims_match_reference(block, dim):
    layout = make_layout("window_random", 4, block, heads=1, window=1, num_random=1)
    check_against_reference(layout, *make_qkv(1, 1, 4 * block - 7, dim))


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
    runs = [outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, None, grad_out) for _ in range(2)]
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


# --- work plans --------------------------------------------------------------------------------------

def test_work_plan_splits_long_rows_into_bounded_contiguous_chunks():
    ptr = torch.tensor([0, 3, 3, 13, 15], dtype=torch.int32)  # rows of length 3, 0, 10, 2
    plan = build_work_plan(ptr, chunk=4)
    lengths = plan.item_end - plan.item_start
    assert plan.num_items == 6 and lengths.max() <= 4
    assert lengths.tolist() == sorted(lengths.tolist(), reverse=True)  # longest first
    assert plan.item_row[lengths == 0].tolist() == [1]  # the empty row still gets its item
    for row in range(4):
        mine = plan.item_row == row
        spans = sorted(zip(plan.item_start[mine].tolist(), plan.item_end[mine].tolist()))
        assert spans[0][0] == ptr[row] and spans[-1][1] == ptr[row + 1]
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert plan.group_row.tolist() == [2] and plan.group_num_parts.tolist() == [3]
    split = plan.item_row == 2
    assert sorted(plan.item_part[split].tolist()) == [0, 1, 2] and set(plan.item_group[split].tolist()) == {0}
    assert set(plan.item_part[~split].tolist()) == {-1} and set(plan.item_group[~split].tolist()) == {-1}


def test_work_plan_is_cached_per_table_and_chunk():
    layout = make_layout("bigbird_itc", 12, 16, heads=2)
    assert cached_work_plan(layout.kv_ptr, 4) is cached_work_plan(layout.kv_ptr, 4)
    assert cached_work_plan(layout.kv_ptr, 4) is not cached_work_plan(layout.kv_ptr, 5)
    assert cached_work_plan(layout.kv_ptr.clone(), 4) is not cached_work_plan(layout.kv_ptr, 4)


# --- compilation for CUDA, no GPU needed -------------------------------------------------------------

def compile_every_kernel(arch: int, configs=None) -> list[str]:
    """Compile each kernel for CUDA sm_<arch> (front end, LLVM and ptxas; no GPU), the way the JIT
    specialises real calls (16-aligned pointers and strides). Returns the failures.

    Catches what the interpreter lets through (e.g. non-constexpr globals, type errors in dead
    branches). Needs TRITON_INTERPRET unset, so the test runs it in a subprocess.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from bigbird_dna.attention import triton_backward as bwd
    from bigbird_dna.attention import triton_forward as fwd

    kernels = [(fwd._attn_fwd_kernel, False), (fwd._attn_fwd_merge_kernel, False), (bwd._bwd_delta_kernel, True),
               (bwd._bwd_dq_kernel, True), (bwd._bwd_dkdv_kernel, True), (bwd._bwd_scatter_kernel, True)]
    fp32_buffers = {"LSE", "DELTA", "O_PART", "LSE_PART", "DQ_ACC", "DK_ACC", "DV_ACC", "ACC"}
    failures = []
    configs = configs or [("bf16", 64, 64, True, False), ("fp32", 32, 128, False, True),
                          ("fp16", 128, 128, False, True)]
    for dtype, block, dim, even, kpm in configs:
        consts = dict(BLOCK=block, HEAD_DIM=dim, EVEN_T=even, HAS_KPM=kpm, MASK_KEYS=kpm or not even,
                      DOT_PRECISION="ieee" if dtype == "fp32" else None)
        for kernel, backward in kernels:
            signature, constexprs = {}, {}
            for param in kernel.params:
                name = param.name
                if param.is_constexpr:
                    signature[name], constexprs[name] = "constexpr", consts[name]
                elif name.isupper():
                    signature[name] = "*fp32" if name in fp32_buffers else "*u8" if name == "KPM" else f"*{dtype}"
                elif name.startswith(("item_", "group_")) or name.endswith("_idx"):
                    signature[name] = "*i32"
                else:
                    signature[name] = "fp32" if name.endswith("scale") else "i32"
            attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
                     if signature[name].startswith("*") or name.startswith("stride") or name == "seq_len"}
            where = f"sm_{arch} {kernel.__name__} {dtype} b{block} d{dim}"
            options = _launch_config(block, dim, 4 if dtype == "fp32" else 2, backward)
            try:
                compiled = triton.compile(ASTSource(kernel, signature, constexprs, attrs),
                                          target=GPUTarget("cuda", arch, 32), options=options)
            except Exception as err:  # noqa: BLE001 - report every failure
                failures.append(f"{where}: {err}")
                continue
            if compiled.metadata.shared > 163 * 1024:  # an A100's opt-in maximum per block
                failures.append(f"{where}: {compiled.metadata.shared} bytes of shared memory")
    return failures


@pytest.mark.skipif(importlib.util.find_spec("triton.backends.nvidia") is None, reason="no CUDA backend in triton")
def test_kernels_compile_for_hopper_and_ampere_without_a_gpu():
    code = ("import sys; from tests.attention.test_triton_kernels import compile_every_kernel as c; "
            "f = c(90) + c(80, [('fp16', 64, 64, True, True)]); print(*f, sep='\\n'); sys.exit(bool(f))")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2], env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]


@pytest.mark.slow
def test_benchmark_smoke_mode_runs_end_to_end(tmp_path):
    repo = Path(__file__).resolve().parents[2]
    out = tmp_path / "attention.json"
    result = subprocess.run([sys.executable, str(repo / "benchmarks" / "attention.py"), "--smoke", "--out", str(out)],
                            cwd=repo, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "| 1 | 768 | triton |" in result.stdout
    assert {row["method"] for row in json.loads(out.read_text())["results"]} >= {"triton", "flex", "sdpa:math"}


# --- full size, GPU only -------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA (compiled kernels)")
@pytest.mark.parametrize("seq", [4096, 16384])
@pytest.mark.parametrize("dim", [64, 128])
def test_gpu_full_size_bigbird_matches_torch_backend(seq, dim):
    heads, block = 12, 64
    pattern = preset("bigbird_itc", **PRESET_PARAMS["bigbird_itc"])
    layout = pattern.build(heads, num_blocks_for(seq, block), block, seed=0, layer=0, device="cuda")
    q, k, v = make_qkv(1, heads, seq, dim, dtype=torch.bfloat16)
    mask = padding_mask([seq - 1000], seq)
    grad_out = torch.randn(q.shape, device="cuda")
    got = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, mask, grad_out)
    ref_inputs = [x.detach().float().requires_grad_() for x in (q, k, v)]
    want = outputs_and_grads(torch_block_sparse_attention, *ref_inputs, layout, mask, grad_out)
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        assert torch.isfinite(a).all(), name
        rel = (a.float() - b).norm() / b.norm()
        assert rel < 1e-2, f"{name}: relative error {rel:.2e}"
