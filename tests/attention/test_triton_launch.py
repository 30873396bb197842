"""The host side of the Triton kernels: the direct launcher's cache key and the scratch buffers.

The launcher is checked with a stand-in for ``JITFunction`` and its compiled kernel (there is no
compiled kernel under the interpreter); the scratch buffers with the real kernels, under the
interpreter on CPU or compiled on a GPU: they are allocated once per shape, the zeroed ones are
left zeroed by the kernels, and a second call gives the same numbers as the first and as the
reference.
"""
import os
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("triton")

from bigbird_dna.attention import dense_reference_attention, preset, triton_launch  # noqa: E402
from bigbird_dna.attention.triton_kernels import KernelOptions, triton_block_sparse_attention  # noqa: E402
from bigbird_dna.attention.triton_launch import KernelLauncher, clear_scratch, scratch, scratch_guard  # noqa: E402

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRETED or not torch.cuda.is_available() else "cuda"


class FakeCompiled:
    """Records direct launches the way ``CompiledKernel.run`` receives them."""

    function, packed_metadata = "fn-handle", "packed"

    def __init__(self):
        self.launches = []

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, g0, g1, g2, stream, function, packed, metadata, enter, exit_, *args):
        self.launches.append(((g0, g1, g2), stream, function, packed, args))


class FakeJIT:
    """``fn[grid](*args, **options)`` like a JITFunction: compiles once per specialisation."""

    def __init__(self, names):
        self.params = [SimpleNamespace(name=n) for n in names]
        self.jit_calls = []
        self.kernel = FakeCompiled()

    def __getitem__(self, grid):
        def launch(*args, **options):
            self.jit_calls.append((grid, args, options))
            return self.kernel
        return launch


@pytest.fixture()
def fake_driver(monkeypatch):
    active = SimpleNamespace(get_current_device=lambda: 0, get_current_stream=lambda device: 1234)
    monkeypatch.setattr(triton_launch, "driver", SimpleNamespace(active=active))


def test_launcher_reuses_the_compiled_kernel_only_for_the_same_specialisation(fake_driver):
    fn = FakeJIT(["X", "n", "scale", "FLAG", "BLOCK"])
    launch = KernelLauncher(fn)
    x = torch.zeros(64)
    launch((4,), x, 32, 0.5, True, BLOCK=16, num_warps=4)
    assert len(fn.jit_calls) == 1 and not fn.kernel.launches
    launch((4, 2), x, 32, 0.25, True, BLOCK=16, num_warps=4)  # another float value: same kernel
    assert len(fn.jit_calls) == 1 and launch.direct_launches == 1
    grid, stream, function, packed, args = fn.kernel.launches[0]
    assert grid == (4, 2, 1) and stream == 1234 and (function, packed) == ("fn-handle", "packed")
    assert args == (x, 32, 0.25, True, 16)  # every parameter in signature order, no launch option

    # Anything Triton specialises on gets its own entry: an int's value, a bool, a constexpr,
    # the launch options, a tensor's dtype or its 16-byte alignment.
    for changed in [dict(n=33), dict(n=1), dict(FLAG=1), dict(BLOCK=32), dict(num_warps=8),
                    dict(X=torch.zeros(64, dtype=torch.float16)), dict(X=x[1:])]:
        kwargs = dict(X=x, n=32, scale=0.5, FLAG=True, BLOCK=16, num_warps=4) | changed
        before = len(fn.jit_calls)
        launch((4,), **kwargs)
        assert len(fn.jit_calls) == before + 1, changed
    assert x[1:].data_ptr() % 16 != 0


def test_launcher_falls_back_to_the_jit_path(fake_driver):
    fn = FakeJIT(["X", "obj"])
    launch = KernelLauncher(fn)
    for _ in range(2):  # an argument type whose specialisation is not modelled: never cached
        launch((1,), torch.zeros(4), object())
    assert len(fn.jit_calls) == 2 and launch.direct_launches == 0

    fn.kernel = None  # warm-up style returns (or the interpreter) give nothing to cache
    launch = KernelLauncher(fn)
    for _ in range(2):
        launch((1,), torch.zeros(4), 3)
    assert len(fn.jit_calls) == 4 and launch.direct_launches == 0


def test_interpreted_kernels_launch_through_the_jit_path():
    class Interpreted:  # the interpreter's InterpretedFunction has no .params
        calls = []

        def __getitem__(self, grid):
            return lambda *args, **options: self.calls.append((grid, args, options))

    launch = KernelLauncher(Interpreted())
    launch((2,), 1, 2, BLOCK=16)
    assert launch.param_names is None and Interpreted.calls == [((2,), (1, 2), {"BLOCK": 16})]


def test_scratch_buffers_are_kept_per_shape_and_dropped_after_a_failed_launch():
    clear_scratch()
    a = scratch("acc", (2, 3), torch.float32, "cpu", zero=True)
    assert scratch("acc", (2, 3), torch.float32, "cpu") is a and not a.any()
    assert scratch("acc", (2, 4), torch.float32, "cpu") is not a
    a.fill_(1.0)
    with pytest.raises(RuntimeError), scratch_guard():
        raise RuntimeError("launch failed")
    fresh = scratch("acc", (2, 3), torch.float32, "cpu", zero=True)
    assert fresh is not a and not fresh.any()


@pytest.mark.skipif(DEVICE == "cpu" and not INTERPRETED, reason="needs CUDA or TRITON_INTERPRET=1")
@pytest.mark.parametrize("merge, dq", [("fused", "kernel"), ("launch", "kernel"), ("fused", "atomic")])
def test_repeated_calls_reuse_zeroed_scratch_and_give_the_same_numbers(merge, dq):
    """Split global rows and columns (chunks of 2 blocks) use every scratch buffer: the fused
    merge's arrival counters, the backward's accumulators and the atomic dQ buffer must be zero
    again after each call."""
    clear_scratch()
    layout = preset("bigbird_itc", window=3, num_random=2, global_per_end=1).build(
        2, 8, 16, seed=0, layer=0, device=DEVICE)
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, 8 * 16, 16, generator=g).to(DEVICE).requires_grad_() for _ in range(3))
    grad_out = torch.randn(q.shape, generator=g).to(DEVICE)
    options = KernelOptions(index_mode="preload", merge=merge, chunk_blocks=2, dq=dq)

    def run():
        out = triton_block_sparse_attention(q, k, v, layout, options=options)
        return [out.detach(), *torch.autograd.grad(out, (q, k, v), grad_out)]

    first = run()
    buffers = {key[0]: buf for key, buf in triton_launch._scratch.items()}
    expected = ({"fwd_o_part", "fwd_lse_part", "bwd_delta", "bwd_acc"}
                | ({"fwd_counter"} if merge == "fused" else set()) | ({"bwd_dq_atomic"} if dq == "atomic" else set()))
    assert set(buffers) == expected
    assert not buffers["bwd_acc"].any() and (merge != "fused" or not buffers["fwd_counter"].any())
    assert dq != "atomic" or not buffers["bwd_dq_atomic"].any()
    second = run()
    assert {key[0]: buf.data_ptr() for key, buf in triton_launch._scratch.items()} == \
        {name: buf.data_ptr() for name, buf in buffers.items()}
    for a, b in zip(first, second):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)  # split rows add in any order

    ref_in = [x.detach().double().requires_grad_() for x in (q, k, v)]
    ref = dense_reference_attention(*ref_in, layout)
    want = [ref, *torch.autograd.grad(ref, ref_in, grad_out.double())]
    for got, exp in zip(second, want):
        torch.testing.assert_close(got.double(), exp, atol=2e-5, rtol=1e-4)
