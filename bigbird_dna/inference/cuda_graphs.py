"""CUDA-graph replay of inference calls at fixed shapes (predict, embed, ``BigBirdDNA``).

A genome scan calls the same model on batches of one shape thousands of times. Eagerly, each call
pays the host's cost of every kernel launch (a 12-layer model: hundreds of launches); replaying a
captured CUDA graph launches them all at once. :class:`GraphedForward` captures one graph per input
signature (shapes, dtypes, which inputs are ``None``, the autocast state) the first time it sees
it, after eager warm-up calls (which compile the Triton kernels and build their work plans: those
sync the host and cannot be captured), and replays it afterwards. Off CUDA, with autograd
enabled, past ``max_graphs`` signatures, or after a capture failed, calls run eagerly.

The graphs share one memory pool. That is safe because every replay's output is copied out
before the next replay: a graph's intermediates may overlap another graph's output buffer.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Callable

import torch

log = logging.getLogger(__name__)

__all__ = ["GraphedForward"]


@dataclass
class _Graph:
    graph: torch.cuda.CUDAGraph
    inputs: list[torch.Tensor | None]  # static input buffers, refilled before each replay
    output: torch.Tensor


def _autocast_state(device_type: str) -> tuple[bool, torch.dtype]:
    return torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type)


class GraphedForward:
    """``fn(*inputs) -> Tensor`` replayed from CUDA graphs, one per input signature.

    Args:
        fn: a function of tensors (``None`` allowed, e.g. ``attention_mask=None``) returning one
            tensor, with no host syncs after its first calls and no side effects the graph would
            not repeat. Called by the caller under ``torch.inference_mode`` (or ``no_grad``).
        max_graphs: signatures captured at most; later new ones run eagerly.
        warmup_calls: eager calls on the capture stream before capturing.

    Attributes ``captures``, ``replays`` and ``disabled`` (the reason capturing was given up, or
    None) say what happened.
    """

    def __init__(self, fn: Callable[..., torch.Tensor], max_graphs: int = 8, warmup_calls: int = 2):
        self.fn = fn
        self.max_graphs = max_graphs
        self.warmup_calls = warmup_calls
        self.graphs: dict[tuple, _Graph] = {}
        self.pool = None
        self.captures = self.replays = 0
        self.disabled: str | None = None

    def __call__(self, *inputs: torch.Tensor | None) -> torch.Tensor:
        device = next((x.device for x in inputs if x is not None), None)
        if device is None or device.type != "cuda" or self.disabled or torch.is_grad_enabled():
            return self.fn(*inputs)
        key = (tuple(None if x is None else (x.shape, x.dtype, x.device) for x in inputs), _autocast_state("cuda"))
        entry = self.graphs.get(key)
        if entry is None:
            if len(self.graphs) >= self.max_graphs:
                return self.fn(*inputs)
            try:
                entry = self.graphs[key] = self._capture(inputs, device)
            except RuntimeError as err:  # e.g. a host sync inside fn: capturing is not possible
                self.disabled = f"{type(err).__name__}: {err}"
                log.warning("CUDA-graph capture failed; running eagerly from now on (%s)", self.disabled)
                torch.cuda.synchronize(device)
                return self.fn(*inputs)
        for static, x in zip(entry.inputs, inputs):
            if static is not None:
                static.copy_(x, non_blocking=True)
        entry.graph.replay()
        self.replays += 1
        return entry.output.clone()  # the next replay (of any graph in the pool) may overwrite it

    def _capture(self, inputs, device: torch.device) -> _Graph:
        static = [None if x is None else x.clone() for x in inputs]
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(self.warmup_calls):  # compiles kernels, builds plans and layouts
                self.fn(*static)
        torch.cuda.current_stream(device).wait_stream(stream)
        self.pool = self.pool if self.pool is not None else torch.cuda.graph_pool_handle()
        graph = torch.cuda.CUDAGraph()
        enabled, dtype = _autocast_state("cuda")
        # Autocast's cache of cast weights is freed when the caller's autocast block ends, which
        # would free memory the graph reads: capture with the cache off.
        autocast = torch.autocast("cuda", dtype=dtype, cache_enabled=False) if enabled else contextlib.nullcontext()
        with autocast, torch.cuda.graph(graph, pool=self.pool, stream=stream):
            output = self.fn(*static)
        self.captures += 1
        return _Graph(graph, static, output)
