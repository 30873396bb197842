"""AdamW with linear warmup then linear decay to zero, stepped every optimizer step."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


def _decayed_parameter_ids(module: nn.Module) -> set[int]:
    """Weight decay applies to the weight matrices of linear layers, not to biases, norms or embeddings."""
    return {id(m.weight) for m in module.modules() if isinstance(m, nn.Linear)}


def build_optimizer(module: nn.Module, optim: dict[str, Any], total_steps: int | float) -> dict:
    """Lightning ``configure_optimizers`` result for the ``optim`` config group.

    Args:
        module: the model whose trainable parameters are optimized.
        optim: ``lr``, ``weight_decay``, ``betas``, ``warmup_steps`` (an int, or a fraction of
            ``total_steps`` when below 1).
        total_steps: optimizer steps of the whole run (``trainer.estimated_stepping_batches``).
    """
    params = [p for p in module.parameters() if p.requires_grad]
    decayed = _decayed_parameter_ids(module)
    groups = [
        {"params": [p for p in params if id(p) in decayed], "weight_decay": optim["weight_decay"]},
        {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=optim["lr"], betas=tuple(optim["betas"]), eps=optim.get("eps", 1e-8))
    total = max(int(total_steps), 1)
    warmup = optim["warmup_steps"]
    warmup = int(warmup * total) if warmup < 1 else int(warmup)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
