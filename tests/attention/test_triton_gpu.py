"""Full-size checks of the compiled Triton kernels on a GPU (skipped without CUDA)."""
import pytest
import torch

pytest.importorskip("triton")

from bigbird_dna.attention import num_blocks_for, preset, torch_block_sparse_attention  # noqa: E402
from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention  # noqa: E402
from tests.attention.test_triton_kernels import (  # noqa: E402
    DEVICE,
    PRESET_PARAMS,
    make_qkv,
    outputs_and_grads,
    padding_mask,
)


@pytest.mark.gpu
@pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA (compiled kernels)")
@pytest.mark.parametrize("seq", [4096, 16384])
@pytest.mark.parametrize("dim", [64, 128])
@pytest.mark.parametrize("variant", ["loop", "preload-fused", "preload-fused-atomic-dq"])
def test_gpu_full_size_bigbird_matches_torch_backend(seq, dim, variant):
    heads, block = 12, 64
    pattern = preset("bigbird_itc", **PRESET_PARAMS["bigbird_itc"])
    layout = pattern.build(heads, num_blocks_for(seq, block), block, seed=0, layer=0, device="cuda")
    q, k, v = make_qkv(1, heads, seq, dim, dtype=torch.bfloat16)
    mask = padding_mask([seq - 1000], seq)
    grad_out = torch.randn(q.shape, device="cuda")
    got = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, mask, grad_out, options=variant)
    ref_inputs = [x.detach().float().requires_grad_() for x in (q, k, v)]
    want = outputs_and_grads(torch_block_sparse_attention, *ref_inputs, layout, mask, grad_out)
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        assert torch.isfinite(a).all(), name
        rel = (a.float() - b).norm() / b.norm()
        assert rel < 1e-2, f"{name}: relative error {rel:.2e}"


@pytest.mark.gpu
@pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA (compiled kernels)")
@pytest.mark.parametrize("variant", ["loop", "preload-fused", "preload-fused-atomic-dq"])
def test_gpu_forward_and_backward_are_sync_free_and_capture_in_a_cuda_graph(variant):
    """After the first call with a layout, a call does no host sync and replays from a CUDA graph."""
    seq, heads = 4096, 12
    pattern = preset("bigbird_itc", **PRESET_PARAMS["bigbird_itc"])
    layout = pattern.build(heads, num_blocks_for(seq, 64), 64, seed=0, layer=0, device="cuda")
    q, k, v = make_qkv(1, heads, seq, 64, dtype=torch.bfloat16)
    mask = padding_mask([seq - 300], seq)
    grad_out = torch.randn(q.shape, device="cuda", dtype=torch.bfloat16)

    def step():
        out = triton_block_sparse_attention(q, k, v, layout, mask, options=variant)
        return (out, *torch.autograd.grad(out, (q, k, v), grad_out))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()  # first call: compiles, builds and caches the work plans (one host sync)
        torch.cuda.set_sync_debug_mode("error")
        try:
            want = step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        got = step()
    graph.replay()
    torch.cuda.synchronize()
    for name, a, b in zip(("out", "dq", "dk", "dv"), got, want):
        torch.testing.assert_close(a, b, atol=2e-2, rtol=2e-2, msg=lambda m, n=name: f"{n}: {m}")


@pytest.mark.gpu
@pytest.mark.skipif(DEVICE != "cuda", reason="needs CUDA (compiled kernels)")
def test_gpu_direct_launches_give_the_jit_launches_numbers():
    """The second call launches every kernel through its cached compiled kernel
    (``triton_launch.KernelLauncher``), with bitwise the first call's results (no split rows at
    this size and batch: every block is stored directly, deterministically)."""
    from bigbird_dna.attention import triton_kernels

    seq, heads = 2048, 4
    pattern = preset("bigbird_itc", **PRESET_PARAMS["bigbird_itc"])
    layout = pattern.build(heads, num_blocks_for(seq, 64), 64, seed=1, layer=0, device="cuda")
    q, k, v = make_qkv(2, heads, seq, 64, dtype=torch.bfloat16)
    grad_out = torch.randn(q.shape, device="cuda", dtype=torch.bfloat16)
    launchers = [triton_kernels._FWD, triton_kernels._BWD_DELTA, triton_kernels._BWD_DQ, triton_kernels._BWD_DKDV]
    first = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, None, grad_out, chunk_blocks=64)
    before = [launch.direct_launches for launch in launchers]
    second = outputs_and_grads(triton_block_sparse_attention, q, k, v, layout, None, grad_out, chunk_blocks=64)
    assert all(launch.direct_launches > n for launch, n in zip(launchers, before))
    for name, a, b in zip(("out", "dq", "dk", "dv"), first, second):
        assert torch.equal(a, b), name
