"""``BigBirdEncoder.compile_layers`` and the ``callbacks.compile`` callback.

Compiled layers must give the eager numbers (forward and every parameter's gradient), with
attention left eager as the one graph break per layer (so the Triton kernels run as written),
RoPE and the convolution inside the graphs, and checkpoints unchanged.
"""
import copy

import pytest
import torch

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.training.compiled_layers import CompileLayers, compiled_layers


def _encoder(backend="torch", num_layers=3):
    torch.manual_seed(0)
    return BigBirdEncoder(EncoderConfig(
        vocab_size=16, hidden_size=32, num_layers=num_layers, num_heads=2, intermediate_size=64, dropout=0.0,
        max_positions=256, position="rope", conv_kernel=3,
        attention={"preset": "bigbird_itc", "block_size": 16, "backend": backend,
                   "params": {"window": 3, "num_random": 1, "global_per_end": 1}}))


def _forward_backward(encoder, ids):
    encoder.zero_grad(set_to_none=True)
    out = encoder(ids)
    out.square().mean().backward()
    return out.detach(), {n: p.grad for n, p in encoder.named_parameters() if p.grad is not None}


def _compare(backend, compile_backend, atol):
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    eager = _encoder(backend)
    compiled = copy.deepcopy(eager)
    compiled.compile_layers(backend=compile_backend)
    ids = torch.randint(5, 16, (2, 100), generator=torch.Generator().manual_seed(1))
    want, want_grads = _forward_backward(eager, ids)
    got, got_grads = _forward_backward(compiled, ids)
    torch.testing.assert_close(got, want, atol=atol, rtol=atol)
    assert want_grads.keys() == got_grads.keys() and len(want_grads) > 10
    for name in want_grads:
        torch.testing.assert_close(got_grads[name], want_grads[name], atol=atol, rtol=atol, msg=name)
    assert counters["stats"]["unique_graphs"] >= 2  # the layers really ran compiled
    breaks = [reason for reason in counters["graph_break"] if "attend" not in reason]
    assert not breaks, breaks  # the only graph break is the eager attention
    assert compiled.state_dict().keys() == eager.state_dict().keys()


def test_compiled_layers_trace_to_the_eager_numbers():
    _compare("torch", "aot_eager", atol=1e-6)


def test_inductor_compiled_layers_match_eager():
    _compare("torch", "inductor", atol=2e-4)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the interpreter path; GPU runs test_triton_gpu")
def test_triton_kernels_stay_eager_inside_compiled_layers():
    pytest.importorskip("triton")
    _compare("triton", "aot_eager", atol=1e-5)


def test_callback_is_off_unless_enabled_and_compiles_each_encoder_once():
    assert compiled_layers() is None
    callback = compiled_layers(enabled=True, backend="aot_eager")
    assert isinstance(callback, CompileLayers) and callback.options["backend"] == "aot_eager"
    module = torch.nn.Module()
    module.encoder = _encoder(num_layers=2)
    callback.setup(None, module, "fit")
    first = [layer._compiled_call_impl for layer in module.encoder.layers]
    assert all(impl is not None for impl in first)
    callback.setup(None, module, "test")  # a second stage keeps the compiled layers (no recompiling)
    assert [layer._compiled_call_impl for layer in module.encoder.layers] == first


def test_train_runs_with_compiled_layers(train_in_process):
    summary, run_dir = train_in_process("callbacks.compile.enabled=true", "callbacks.compile.backend=aot_eager",
                                        "test=false")
    assert summary["global_step"] > 0 and (run_dir / "checkpoints" / "last.ckpt").exists()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_gpu_compiled_layers_around_the_triton_kernels_match_eager_in_bf16():
    from bigbird_dna.tasks.optim import build_optimizer

    torch._dynamo.reset()
    eager = _encoder("triton").cuda()
    compiled = copy.deepcopy(eager)
    compiled.compile_layers()
    ids = torch.randint(5, 16, (2, 256), generator=torch.Generator().manual_seed(1)).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        want, want_grads = _forward_backward(eager, ids)
        got, got_grads = _forward_backward(compiled, ids)
    torch.testing.assert_close(got.float(), want.float(), atol=3e-2, rtol=3e-2)
    for name in want_grads:
        scale = want_grads[name].abs().max().clamp_min(1e-6)
        assert (got_grads[name] - want_grads[name]).abs().max() / scale < 5e-2, name
    assert build_optimizer(compiled, {"lr": 1e-3}, 10)["optimizer"].defaults["fused"]  # GPU parameters: fused
