"""CUDA-graph replay of inference (``inference/cuda_graphs.py``): eager off CUDA and under autograd;
on a GPU, one graph per input signature whose replays give the eager numbers for new inputs."""
import argparse

import pytest
import torch

from bigbird_dna.inference.cuda_graphs import GraphedForward
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.networks import SequenceClassifier
from bigbird_dna.model.outputs import SIGMOID, ModelOutput, default_names
from bigbird_dna.runtime.cli_args import add_device_arguments

GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not GPU, reason="needs CUDA")


def tiny_classifier(device, backend="auto", pooling="mean_max") -> SequenceClassifier:
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=12, hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128,
                           max_positions=1024, dropout=0.0, conv_kernel=5,
                           attention={"block_size": 32, "backend": backend})
    output = ModelOutput(SIGMOID, default_names("label", 3))
    return SequenceClassifier(config, output, head={"pooling": pooling}).to(device).eval()


def test_off_cuda_and_under_autograd_calls_run_eagerly():
    calls = []
    graphed = GraphedForward(lambda x, m: calls.append(m) or x * 2)
    x = torch.ones(2, 3)
    with torch.inference_mode():
        assert torch.equal(graphed(x, None), x * 2)
    assert torch.equal(graphed(x, None), x * 2)
    assert graphed.captures == graphed.replays == 0 and len(calls) == 2 and not graphed.graphs


def test_the_inference_clis_take_cuda_graphs_on_by_default():
    parser = argparse.ArgumentParser()
    add_device_arguments(parser)
    assert parser.parse_args([]).cuda_graphs is True
    assert parser.parse_args(["--no-cuda-graphs"]).cuda_graphs is False


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
@pytest.mark.parametrize("pooling", ["mean_max", "cls"])  # cls: the [CLS]-only last layer (PyTorch SDPA)
def test_replays_give_the_eager_numbers_for_new_inputs(precision, pooling):
    model = tiny_classifier("cuda", pooling=pooling)
    graphed = GraphedForward(model.predict_proba)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16")
    g = torch.Generator().manual_seed(1)
    tol = {"atol": 1e-5, "rtol": 1e-5} if precision == "fp32" else {"atol": 2e-2, "rtol": 2e-2}
    for step in range(3):  # same shape, new values: one capture, then replays
        ids = torch.randint(5, 12, (4, 700), generator=g).cuda()
        with torch.inference_mode(), autocast:
            got, want = graphed(ids, None), model.predict_proba(ids, None)
        torch.testing.assert_close(got, want, **tol)
    assert graphed.captures == 1 and graphed.replays == 3

    ids = torch.randint(5, 12, (2, 300), generator=g).cuda()
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 250:] = False
    with torch.inference_mode(), autocast:  # a new signature (shape, a mask): a second graph
        torch.testing.assert_close(graphed(ids, mask), model.predict_proba(ids, mask), **tol)
    assert graphed.captures == 2 and graphed.disabled is None


@needs_gpu
@pytest.mark.gpu
def test_signatures_past_the_limit_and_failed_captures_run_eagerly():
    model = tiny_classifier("cuda")
    graphed = GraphedForward(model.predict_proba, max_graphs=1)
    with torch.inference_mode():
        for length in (200, 300):
            ids = torch.randint(5, 12, (2, length)).cuda()
            torch.testing.assert_close(graphed(ids, None), model.predict_proba(ids, None))
    assert graphed.captures == 1 and graphed.replays == 1

    syncing = GraphedForward(lambda x: x * float(x.sum()))  # .item()-like host sync: not capturable
    x = torch.ones(3, device="cuda")
    with torch.inference_mode():
        assert torch.equal(syncing(x), x * 3)
        assert torch.equal(syncing(x), x * 3)
    assert syncing.disabled and syncing.captures == 0
