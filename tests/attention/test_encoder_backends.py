"""The encoder gives the same result with the Triton kernels (interpreter on CPU) and PyTorch."""

import torch

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder


def test_encoder_triton_backend_matches_torch_backend_forward_and_backward():
    outputs, grads = [], []
    for backend in ("torch", "triton"):
        torch.manual_seed(0)
        config = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                               max_positions=512, dropout=0.0,
                               attention={"block_size": 16, "backend": backend})
        encoder = BigBirdEncoder(config)
        ids = torch.randint(5, 40, (2, 230), generator=torch.Generator().manual_seed(1))
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 200:] = False
        out = encoder(ids, mask)
        out.square().sum().backward()
        outputs.append(out.detach())
        grads.append(encoder.layers[0].attn.qkv.weight.grad.clone())
    assert torch.allclose(outputs[0], outputs[1], atol=1e-4)
    assert torch.allclose(grads[0], grads[1], atol=1e-3, rtol=1e-3)
