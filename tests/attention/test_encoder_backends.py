"""The encoder gives the same result with the Triton kernels and PyTorch, and with layers recomputed.

``backend="triton"`` runs compiled kernels on CUDA tensors, or the interpreter on CPU tensors
(``TRITON_INTERPRET=1``, set by ``conftest.py`` only where there is no CUDA). So the tensors must be
on CUDA whenever there is a GPU: CPU tensors there would be refused.
"""

import pytest
import torch

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder


def triton_device() -> torch.device:
    """Where ``backend="triton"`` runs in the tests: the GPU if there is one, else the interpreter."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def encode(backend: str, device: torch.device, checkpoint_layers: bool = False, saved: list | None = None):
    """Output and the first layer's qkv gradient of a 2-layer encoder on a padded batch.

    ``saved`` collects the bytes of every tensor the forward keeps for the backward.
    """
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_positions=512, dropout=0.1, checkpoint_layers=checkpoint_layers,
                           attention={"block_size": 16, "backend": backend})
    encoder = BigBirdEncoder(config).to(device)
    ids = torch.randint(5, 40, (2, 230), generator=torch.Generator().manual_seed(1)).to(device)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 200:] = False
    torch.manual_seed(2)  # the same dropout masks in every run
    record = (lambda t: saved.append(t.numel() * t.element_size()) or t) if saved is not None else (lambda t: t)
    with torch.autograd.graph.saved_tensors_hooks(record, lambda t: t):
        out = encoder(ids, mask)
    out.square().sum().backward()
    return out.detach().cpu(), encoder.layers[0].attn.qkv.weight.grad.cpu()


def test_triton_backend_runs_on_cuda_tensors_whenever_there_is_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert triton_device().type == "cuda"


def test_encoder_triton_backend_matches_torch_backend_forward_and_backward():
    pytest.importorskip("triton")
    device = triton_device()
    want_out, want_grad = encode("torch", device)
    got_out, got_grad = encode("triton", device)
    torch.testing.assert_close(got_out, want_out, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-3, rtol=1e-3)


def test_checkpointed_layers_give_the_same_outputs_and_gradients():
    """``checkpoint_layers`` recomputes each layer in the backward, with the same dropout masks."""
    kept, recomputed = [], []
    want_out, want_grad = encode("torch", torch.device("cpu"), saved=kept)
    got_out, got_grad = encode("torch", torch.device("cpu"), checkpoint_layers=True, saved=recomputed)
    assert sum(recomputed) < sum(kept) / 2  # the layers' activations are not kept
    assert torch.equal(got_out, want_out)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-6, rtol=1e-6)


def test_triton_no_padding_path_gives_the_all_true_mask_numbers():
    """``attention_mask=None`` runs the kernels compiled without ``HAS_KPM`` (the path a batch
    without padding takes); they must agree with the masked kernels given an all-True mask."""
    pytest.importorskip("triton")
    device = triton_device()
    config = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_positions=512, dropout=0.0, attention={"block_size": 16, "backend": "triton"})
    torch.manual_seed(0)
    encoder = BigBirdEncoder(config).to(device)
    ids = torch.randint(5, 40, (2, 224), generator=torch.Generator().manual_seed(1)).to(device)
    results = []
    for mask in (torch.ones_like(ids, dtype=torch.bool), None):
        encoder.zero_grad()
        out = encoder(ids, mask)
        out.square().sum().backward()
        results.append((out.detach().cpu(), encoder.layers[0].attn.qkv.weight.grad.cpu()))
    (want_out, want_grad), (got_out, got_grad) = results
    torch.testing.assert_close(got_out, want_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-4, rtol=1e-4)
