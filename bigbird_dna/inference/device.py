"""Where inference runs and in what precision: ``--device`` and ``--precision`` resolved once, for
``predict``, ``embed``, ``score``, ``variants`` and :class:`~bigbird_dna.pretrained.BigBirdDNA`."""

from __future__ import annotations

from contextlib import nullcontext
from typing import ContextManager

import torch

from bigbird_dna.errors import InputError

PRECISIONS = ("auto", "fp32", "bf16")


def resolve_device(name: str) -> torch.device:
    """``auto`` = CUDA when there is a GPU, else CPU; or any torch device string."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as err:
        raise InputError(f"unknown device {name!r}: {err}. Use auto, cpu, cuda or cuda:N.") from err
    if device.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"--device {name}: no CUDA GPU is visible. Use --device cpu (or auto).")
    return device


def resolve_precision(precision: str, device: torch.device) -> str:
    """``auto`` = ``bf16`` autocast on a GPU, ``fp32`` on CPU; ``fp32``/``bf16`` as given."""
    if precision not in PRECISIONS:
        raise InputError(f"precision {precision!r} is not one of {PRECISIONS}.")
    if precision != "auto":
        return precision
    return "bf16" if device.type == "cuda" else "fp32"


def autocast(device: torch.device, precision: str) -> ContextManager:
    """bf16 autocast on ``device`` for ``precision="bf16"``, else nothing."""
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    return nullcontext()
