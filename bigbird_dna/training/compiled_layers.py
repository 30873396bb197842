"""``callbacks.compile``: train with the encoder's layers under ``torch.compile`` (off by default).

Eager PyTorch runs each norm, bias, GELU, dropout and residual add of a layer as its own kernel,
reading and writing the whole ``[B, T, hidden]`` activation each time. Compiled, Inductor fuses
them into a few kernels around the matrix multiplies; the block-sparse attention itself stays
eager (:meth:`~bigbird_dna.model.encoder.BlockSparseSelfAttention.attend`), one graph break per
layer. Every layer shares the same graphs, so compiling costs the same for 2 or 24 layers.

    python -m bigbird_dna.train experiment=pretrain_gpu callbacks.compile.enabled=true

What it gains is measured by ``benchmarks/train_throughput.py`` (rows ``ours+compile``). It
needs a C++ compiler on CPU; the first step of each new batch shape (and of validation) pays
the compile time. Checkpoints are the same with and without it.
"""

from __future__ import annotations

from typing import Any

import lightning as L
from lightning.pytorch.callbacks import Callback

from bigbird_dna.model.encoder import BigBirdEncoder


class CompileLayers(Callback):
    """Compiles the layers of every :class:`BigBirdEncoder` in the task, once, at ``setup``.

    Args:
        options: ``torch.compile`` keyword arguments (``mode``, ``backend``, ``dynamic``).
    """

    def __init__(self, **options: Any):
        self.options = options
        self.compiled: set[int] = set()

    def setup(self, trainer: L.Trainer, pl_module: L.LightningModule, stage: str) -> None:
        for module in pl_module.modules():
            if isinstance(module, BigBirdEncoder) and id(module) not in self.compiled:
                module.compile_layers(**self.options)
                self.compiled.add(id(module))


def compiled_layers(enabled: bool = False, mode: str | None = None, backend: str = "inductor",
                    dynamic: bool | None = None) -> CompileLayers | None:
    """A :class:`CompileLayers` callback, or ``None`` (no callback) unless ``enabled``.

    ``mode``: ``torch.compile``'s (``None``: its default; ``max-autotune-no-cudagraphs`` tunes the
    matrix multiplies too). ``backend``: ``inductor``, or ``aot_eager`` to check tracing quickly.
    """
    if not enabled:
        return None
    return CompileLayers(mode=mode, backend=backend, dynamic=dynamic)
