"""Optimizers, chosen by the ``optim`` config group's ``_target_`` (``conf/optim/``).

A target is a function ``(module, total_steps, **settings) -> configure_optimizers result``;
:func:`adamw_with_warmup` is the default: AdamW with linear warmup then linear decay to zero,
stepped every optimizer step. The group is kept as a plain dict in the task's hyperparameters (so
checkpoints load with ``weights_only``) and resolved when Lightning asks for the optimizer.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
from hydra.utils import get_method
from torch import nn

# Configs saved before the optim group carried a _target_ meant this one.
DEFAULT_OPTIMIZER = "bigbird_dna.tasks.optim.adamw_with_warmup"


def _decayed_parameter_ids(module: nn.Module) -> set[int]:
    """Weight decay applies to the weight matrices of linear layers, not to biases, norms or embeddings."""
    return {id(m.weight) for m in module.modules() if isinstance(m, nn.Linear)}


def build_optimizer(module: nn.Module, optim: dict[str, Any], total_steps: int | float) -> dict:
    """Lightning ``configure_optimizers`` result for the ``optim`` config group.

    Args:
        module: the model whose trainable parameters are optimized.
        optim: ``_target_`` (default :data:`DEFAULT_OPTIMIZER`) and that function's settings.
        total_steps: optimizer steps of the whole run (``trainer.estimated_stepping_batches``).
    """
    settings = {k: v for k, v in optim.items() if k != "_target_"}
    return get_method(optim.get("_target_", DEFAULT_OPTIMIZER))(module, total_steps, **settings)


def adamw_with_warmup(module: nn.Module, total_steps: int | float, lr: float, weight_decay: float = 0.01,
                      betas: Sequence[float] = (0.9, 0.98), eps: float = 1e-8, warmup_steps: float = 0.06) -> dict:
    """AdamW (no decay on biases, norms and embeddings), linear warmup, then linear decay to zero.

    Args:
        module: the model whose trainable parameters are optimized.
        total_steps: optimizer steps of the whole run.
        lr, weight_decay, betas, eps: AdamW's settings.
        warmup_steps: a step count, or a fraction of ``total_steps`` when below 1.
    """
    params = [p for p in module.parameters() if p.requires_grad]
    decayed = _decayed_parameter_ids(module)
    groups = [
        {"params": [p for p in params if id(p) in decayed], "weight_decay": weight_decay},
        {"params": [p for p in params if id(p) not in decayed], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, betas=tuple(betas), eps=eps)
    total = max(int(total_steps), 1)
    warmup = int(warmup_steps * total) if warmup_steps < 1 else int(warmup_steps)

    def factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / (warmup + 1)
        return max(0.0, (total - step) / max(1, total - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
