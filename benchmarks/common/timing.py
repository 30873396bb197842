"""Timing that holds up: at least 50 timed calls per repeat, 3 repeats, the median and the spread.

On CUDA every call is timed by its own pair of CUDA events, with the L2 cache flushed before it
(as ``triton.testing.do_bench`` does), after a warm-up of at least 25 ms and 3 calls. A
measurement is the dict of :func:`repeat_stats`: the median of the per-repeat medians (the figure
reported), every repeat's median, their min and max and relative spread, and the interquartile
range of all timed calls. Off CUDA (smoke and dry runs) ``fn`` is called once: it checks the
script, not the speed.

CUDA-graph replays (:func:`capture`) give the GPU time of a step with no host in the way, and
:func:`host_ms` the host's: the wall time per call of calls issued back to back.
"""
from __future__ import annotations

import math
import statistics
import time

import torch

MIN_ITERATIONS = 50  # timed calls per repeat, at least
MIN_REPEATS = 3
L2_FLUSH_BYTES = 256 * 2**20  # more than any current GPU's L2 (H100: 50 MB)
_flush_buffers: dict = {}


def repeat_stats(samples_ms: list[list[float]]) -> dict:
    """Summary of ``samples_ms[r][i]``, milliseconds of call ``i`` in repeat ``r``.

    ``ms``: the median of the repeats' medians; ``repeat_medians_ms``; ``min_repeat_ms`` and
    ``max_repeat_ms``; ``spread_pct``: (max - min) / ms in percent; ``iqr_ms``: the 25th and 75th
    percentiles of all calls pooled; ``iterations``: calls per repeat (the fewest); ``repeats``.
    """
    if not samples_ms or not all(samples_ms):
        raise ValueError("repeat_stats needs at least one repeat of at least one call")
    medians = [statistics.median(repeat) for repeat in samples_ms]
    pooled = sorted(x for repeat in samples_ms for x in repeat)
    q1, q3 = (statistics.quantiles(pooled, n=4, method="inclusive")[0::2] if len(pooled) > 1
              else (pooled[0], pooled[0]))
    ms = statistics.median(medians)
    return {"ms": ms, "repeat_medians_ms": medians, "min_repeat_ms": min(medians), "max_repeat_ms": max(medians),
            "spread_pct": 100.0 * (max(medians) - min(medians)) / ms if ms > 0 else 0.0,
            "iqr_ms": [q1, q3], "iterations": min(len(r) for r in samples_ms), "repeats": len(samples_ms)}


def _flush_buffer(device) -> torch.Tensor:
    key = str(device)
    if key not in _flush_buffers:
        _flush_buffers[key] = torch.empty(L2_FLUSH_BYTES // 4, dtype=torch.int32, device=device)
    return _flush_buffers[key]


def time_cuda(fn, device="cuda", iterations: int = MIN_ITERATIONS, repeats: int = MIN_REPEATS,
              warmup_ms: float = 25.0, grad_to_none=None) -> dict:
    """:func:`repeat_stats` of ``repeats`` x ``iterations`` calls of ``fn`` on a CUDA device.

    Before each call: the ``.grad`` of every tensor in ``grad_to_none`` is set to None (so a
    backward does not accumulate) and the L2 cache is flushed; neither is timed.
    """
    flush = _flush_buffer(device)
    fn()
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize(device)
    estimate_ms = max(start.elapsed_time(end), 1e-3)
    for _ in range(min(max(3, math.ceil(warmup_ms / estimate_ms)), 1000)):
        fn()
    samples = []
    for _ in range(repeats):
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iterations)]
        for first, last in zip(starts, ends):
            for x in grad_to_none or ():
                x.grad = None
            flush.zero_()
            first.record()
            fn()
            last.record()
        torch.cuda.synchronize(device)
        samples.append([first.elapsed_time(last) for first, last in zip(starts, ends)])
    return repeat_stats(samples)


def bench(fn, device, iterations: int = MIN_ITERATIONS, repeats: int = MIN_REPEATS, grad_to_none=None) -> dict:
    """:func:`time_cuda` on CUDA; elsewhere one call, wall-clock (``iterations`` = ``repeats`` = 1)."""
    if torch.device(device).type == "cuda":
        return time_cuda(fn, device, iterations, repeats, grad_to_none=grad_to_none)
    begin = time.perf_counter()
    fn()
    return repeat_stats([[(time.perf_counter() - begin) * 1e3]])


def host_ms(fn, device="cuda", iterations: int = MIN_ITERATIONS, grad_to_none=None) -> float:
    """Host milliseconds per call of ``fn`` on a CUDA device: ``iterations`` calls issued back to
    back after a synchronisation, timed on the host clock without waiting for the GPU (Python,
    autograd, allocation and launches). Where the GPU is the slower side the launch queue can fill
    and this reads up to the GPU time; ``grad_to_none`` as in :func:`time_cuda`."""
    torch.cuda.synchronize(device)
    start = time.perf_counter()
    for _ in range(iterations):
        for x in grad_to_none or ():
            x.grad = None
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize(device)
    return elapsed * 1e3 / iterations


def capture(step, device="cuda"):
    """``step`` (returning tensors) warmed on a side stream, then captured in a CUDA graph.

    Returns ``(graph, outputs)``: ``graph.replay()`` recomputes ``outputs`` in place. Keep both
    alive as long as the graph may be replayed (its memory pool holds the outputs).
    """
    side = torch.cuda.Stream(device)
    side.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream(device).wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = step()
    torch.cuda.synchronize(device)
    return graph, outputs
