"""Optimizers, chosen by the ``optim`` config group's ``_target_`` (``conf/optim/``).

A target is a function ``(module, total_steps, **settings) -> configure_optimizers result``;
:func:`adamw_with_warmup` is the default: AdamW with linear warmup then linear decay to zero,
stepped every optimizer step. The group is kept as a plain dict in the task's hyperparameters (so
checkpoints load with ``weights_only``) and resolved when Lightning asks for the optimizer.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import torch
from hydra.utils import get_method
from torch import nn

from bigbird_dna.errors import InputError

# Configs saved before the optim group carried a _target_ meant this one.
DEFAULT_OPTIMIZER = "bigbird_dna.tasks.optim.adamw_with_warmup"


def _decayed_parameter_ids(module: nn.Module) -> set[int]:
    """Weight decay applies to the weight matrices of linear layers, not to biases, norms or embeddings."""
    return {id(m.weight) for m in module.modules() if isinstance(m, nn.Linear)}


def layer_depths(module: nn.Module) -> dict[str, int]:
    """Depth of every parameter, by name: 0 for the encoder's embeddings, ``i + 1`` for
    ``encoder.layers.i``, ``L + 1`` for the rest of the encoder (its final norm, and a hybrid
    encoder's whole convolutional stem) and ``L + 2`` for everything outside it (the task's head),
    where ``L`` is the number of layers. The stem reads the input but learns as the top of the
    encoder: the small-set recipe was measured so, and at depth 0 it fell (tests/tasks/test_optim.py)."""
    names = [name for name, _ in module.named_parameters()]
    layer_of = {n: int(n.split(".")[2]) for n in names if n.startswith("encoder.layers.")}
    count = max(layer_of.values(), default=-1) + 1
    embeddings = ("encoder.token_embedding.", "encoder.position_embedding.", "encoder.embed_norm.")
    return {n: layer_of[n] + 1 if n in layer_of else 0 if n.startswith(embeddings)
            else count + 1 if n.startswith("encoder.") else count + 2 for n in names}


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
                      betas: Sequence[float] = (0.9, 0.98), eps: float = 1e-8, warmup_steps: float = 0.06,
                      layer_decay: float = 1.0, probe_steps: float = 0, fused: bool | None = None) -> dict:
    """AdamW (no decay on biases, norms and embeddings), linear warmup, then linear decay to zero.

    Args:
        module: the model whose trainable parameters are optimized.
        total_steps: optimizer steps of the whole run.
        lr, weight_decay, betas, eps: AdamW's settings.
        warmup_steps: a step count, or a fraction of ``total_steps`` when below 1.
        layer_decay: layer-wise learning-rate decay for fine-tuning (as in ELECTRA and BEiT): a
            parameter at :func:`layer_depths` depth ``d`` of ``D`` (the head) learns at
            ``lr * layer_decay ** (D - d)``, so the pretrained embeddings and lower layers move
            least. 1.0 (the default): one lr for all. Groups are ordered from the head down, so
            ``param_groups[0]`` has the full ``lr``.
        probe_steps: linear probing, then fine-tuning (Kumar et al., ICLR 2022): for this many
            steps (a share of ``total_steps`` when below 1) the encoder (parameters named
            ``encoder.*``) holds still while the rest (the head) learns on its features; then the
            encoder runs the same warmup and decay over the steps that are left, ending with the
            head's. 0 (the default): everything learns from the first step.
        fused: PyTorch's fused AdamW kernel (one launch per step instead of several per
            parameter list). ``None``: fused when every parameter is a floating-point CUDA tensor
            (Lightning moves the model before it builds the optimizer), the for-each path otherwise.
    """
    if not 0.0 < layer_decay <= 1.0:
        raise InputError(f"optim.layer_decay={layer_decay} must be in (0, 1]; 1 turns it off.")
    if probe_steps < 0:
        raise InputError(f"optim.probe_steps={probe_steps} must be >= 0: a step count, or a share of the run below 1.")
    named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
    decayed = _decayed_parameter_ids(module)
    depth = layer_depths(module) if layer_decay < 1.0 else {n: 0 for n, _ in named}
    top = max(depth.values(), default=0)
    held_back = {n for n, _ in named if probe_steps and n.startswith("encoder.")}
    groups = []  # one per depth, held back by a probe or not, decayed or not; "held" picks the schedule below
    for d in sorted(set(depth[n] for n, _ in named), reverse=True):
        scale = {"lr": lr * layer_decay ** (top - d)} if layer_decay < 1.0 else {}
        for held in ((False, True) if probe_steps else (False,)):
            for decay in (True, False):
                params = [p for n, p in named if depth[n] == d and (n in held_back) == held
                          and (id(p) in decayed) == decay]
                groups.append({"params": params, "weight_decay": weight_decay if decay else 0.0, "held": held,
                               **scale})
    if layer_decay < 1.0 or probe_steps:
        groups = [g for g in groups if g["params"]]
    if fused is None:
        fused = bool(named) and all(p.is_cuda and p.is_floating_point() for _, p in named)
    optimizer = torch.optim.AdamW(groups, lr=lr, betas=tuple(betas), eps=eps, fused=fused or None)
    total = max(int(total_steps), 1)
    warmup = int(warmup_steps * total) if warmup_steps < 1 else int(warmup_steps)
    probe = min(int(probe_steps * total) if probe_steps < 1 else int(probe_steps), total)

    def factor(step: int, start: int = 0) -> float:
        """The schedule of a group that starts learning at ``start``: 0 before it, then warmup and decay."""
        if step < start:
            return 0.0
        if step - start < warmup:
            return (step - start + 1) / (warmup + 1)
        return max(0.0, (total - step) / max(1, total - start - warmup))

    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, [functools.partial(factor, start=probe) if g["held"] else factor for g in optimizer.param_groups])
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
