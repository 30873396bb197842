"""Model FLOPs utilisation (MFU) of a training step: the arithmetic, apart from any model.

Model FLOPs of one training step (forward + backward), counted the same for every model:

    6 * N * tokens  +  attention

``N``: the non-embedding parameters (every parameter except the weights of ``nn.Embedding``
modules: tokens, positions, token types; a decoder tied to the token embedding is that same
tensor). Attention: per layer and head, the forward computes ``nnz * 4 * b^2 * d`` FLOPs (scores
and weighted values over the nonzero ``b x b`` blocks of the layout) and the backward 2.5 times
that (the FlashAttention convention): ``batch * sum over layers of nnz_layer * 4 * b^2 * d * 3.5``
where ``nnz_layer`` counts the blocks of all heads of that layer. Recomputation
(``checkpoint_layers``) is not model FLOPs.

MFU = model FLOPs / step seconds / the GPU's dense bf16 peak (no sparsity), taken from the device
name (:data:`PEAK_BF16_DENSE_TFLOPS`); None when the device is not listed.
"""
from __future__ import annotations

# Dense bf16 tensor-core peaks from the vendor's data sheets, TFLOP/s, matched in this order by
# substring of the device name (torch.cuda.get_device_name): PCIe and NVL before the SXM part.
PEAK_BF16_DENSE_TFLOPS = (
    ("H100 PCIe", 756.5),
    ("H100 NVL", 835.5),
    ("H100", 989.4),   # SXM ("NVIDIA H100 80GB HBM3")
    ("H200", 989.4),   # "NVIDIA H200", "NVIDIA GH200 ..."
    ("A100", 312.0),
)
BACKWARD_OVER_FORWARD = 2.5


def peak_bf16_tflops(device_name: str | None) -> float | None:
    """Dense bf16 peak of ``device_name`` in TFLOP/s, or None when unknown."""
    for part, tflops in PEAK_BF16_DENSE_TFLOPS:
        if device_name and part in device_name:
            return tflops
    return None


def attention_flops_per_step(batch: int, nnz_per_layer: list[int], block: int, head_dim: int) -> float:
    """Forward + backward attention FLOPs of one step: ``batch * sum(nnz) * 4 b^2 d * (1 + 2.5)``."""
    forward = batch * sum(nnz_per_layer) * 4 * block**2 * head_dim
    return forward * (1 + BACKWARD_OVER_FORWARD)


def model_flops_per_step(non_embedding_params: int, tokens: int, attention_flops: float) -> float:
    """``6 * N * tokens + attention`` FLOPs of one training step."""
    return 6.0 * non_embedding_params * tokens + attention_flops


def mfu(flops_per_step: float, step_s: float, peak_tflops: float | None) -> float | None:
    """Fraction of the peak (0.35 = 35%) that ``flops_per_step`` in ``step_s`` seconds reach."""
    if peak_tflops is None or step_s <= 0:
        return None
    return flops_per_step / step_s / (peak_tflops * 1e12)


def non_embedding_params(model) -> int:
    """Parameters of ``model`` (each tensor once) minus the weights of its ``nn.Embedding`` modules."""
    import torch

    params = {id(p): p.numel() for p in model.parameters()}
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    return sum(n for key, n in params.items() if key not in embeddings)
