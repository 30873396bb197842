"""Starting a task from an export's weights (``task.backbone``): fine-tuning, or continued pretraining.

A classifier takes the export's ``encoder.*`` weights, with the attention layouts they trained
with, and trains its own head. An MLM run takes the MLM head as well when the export is an MLM
one, so that pretraining continues where the export stopped: on a genome first, then on a task's
own sequences (task-adaptive pretraining, docs/pretraining.md). Missing and unexpected keys are
printed, never silently dropped.
"""

from __future__ import annotations

import logging
import os

import torch
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import load_export
from bigbird_dna.model.outputs import MASKED_LM

log = logging.getLogger(__name__)


def report(message: str) -> None:
    """Log at INFO where a handler shows it (a Hydra run: console and log file), else print."""
    if log.isEnabledFor(logging.INFO) and logging.getLogger().handlers:
        log.info(message)
    else:
        print(message, flush=True)


def load_backbone(encoder: BigBirdEncoder, export_path: str | os.PathLike,
                  mlm_head: nn.Module | None = None) -> tuple[list[str], list[str]]:
    """Load the ``encoder.*`` weights of an export (an MLM one, usually) into ``encoder``.

    The attention layouts the backbone trained with (``encoder._extra_state``) come along, so the
    fine-tuned model attends over the same block graphs.

    Args:
        encoder: the encoder to initialise.
        export_path: an export folder (``<run dir>/export``).
        mlm_head: an MLM head to take the export's ``head.*`` weights too (continued pretraining);
            only from an MLM export. ``None``: the export's head is not used; that count is printed.

    Returns:
        ``(missing, unexpected)``: keys the export lacks, and export keys the model does not have,
        with their ``encoder.``/``head.`` prefix. Both are printed and logged.

    Raises:
        InputError: not an export, no encoder weights in it, or weights of another shape.
    """
    export = load_export(export_path)
    parts = {"encoder": encoder}
    if mlm_head is not None and export.output is not None and export.output.kind is MASKED_LM:
        parts["head"] = mlm_head
    missing, unexpected, loaded = [], [], 0
    for prefix, module in parts.items():
        state = {k.removeprefix(f"{prefix}."): v for k, v in export.state_dict.items() if k.startswith(f"{prefix}.")}
        if not state:
            raise InputError(f"{export_path} holds no {prefix}.* weights; point task.backbone at the export "
                             "folder of an MLM run (<run dir>/export).")
        current = module.state_dict()
        wrong = [f"{prefix}.{k} {tuple(v.shape)} vs {tuple(current[k].shape)}" for k, v in state.items()
                 if k in current and torch.is_tensor(v) and v.shape != current[k].shape]
        if wrong:
            raise InputError(f"the backbone {export_path} does not fit this {prefix}: {'; '.join(wrong[:5])}. "
                             "Build the encoder from the backbone's own config (task.backbone sets model=).")
        result = module.load_state_dict(state, strict=False)
        missing += [f"{prefix}.{k}" for k in result.missing_keys]
        unexpected += [f"{prefix}.{k}" for k in result.unexpected_keys]
        loaded += len(state) - len(result.unexpected_keys)
    ignored = sum(1 for k in export.state_dict if k.split(".", 1)[0] not in parts)
    unused = f"{ignored} keys (the {export.task} head) not used" if ignored else "its head taken over too"
    report(f"backbone {export_path} ({export.task}): loaded {loaded} tensors; missing keys: {missing or 'none'}; "
           f"unexpected keys: {unexpected or 'none'}; {unused}.")
    return missing, unexpected
