"""How ``benchmarks/attention.py`` checks and times one attention method, and the ``Recorder``
that keeps one configuration's rows.

Shapes: q, k, v and the output gradient ``[B, H, T, D]``; an attention method is
``attn(q, k, v) -> out``. A *step* is one forward and ``torch.autograd.grad`` of (q, k, v): it
returns ``(out, dq, dk, dv)``.

- Correctness gates, on the whole timed input (every batch row and every head of the plan that is
  timed): :func:`reference_gate` compares ours (output and the three gradients) with the fp32
  PyTorch backend on fp32 copies (:func:`fp32_reference`); :func:`gate_against` compares another
  method with given outputs (Flex against ours). A method that fails its gate is not timed.
- Timing (``timing.py``: at least 50 calls x 3 repeats on CUDA): :func:`measure_eager` times the
  forward, the backward of a retained graph and the whole step, eagerly; :func:`measure_graph`
  times a CUDA-graph replay of the step (the GPU time alone) and checks the replay against an
  eager step.
"""
from __future__ import annotations

import sys
import time

import torch

from benchmarks.common.harness import is_gpu, peak_mib, relative_error, sync, wall_s
from benchmarks.common.timing import bench, capture, host_ms

NAMES = ("out", "dq", "dk", "dv")
SLOW_CALL_MS = 20.0  # a step slower than this (dense attention at 64K) is timed whole, not in parts


def gate_limit(dtype: torch.dtype) -> float:
    """Largest relative error of an output or gradient that passes: 1e-4 in fp32, 2e-2 in bf16/fp16."""
    return 1e-4 if dtype in (torch.float32, torch.float64) else 2e-2


def step_outputs(attn, q, k, v, grad_out) -> tuple:
    """``(out, dq, dk, dv)`` of one forward and backward of ``attn``; ``.grad`` is left untouched."""
    out = attn(q, k, v)
    return (out.detach(), *torch.autograd.grad(out, (q, k, v), grad_out))


def errors(got, want) -> dict:
    """Relative errors (Frobenius, fp32) of ``got`` = (out, dq, dk, dv) against ``want``."""
    return {name: relative_error(a, b) for name, a, b in zip(NAMES, got, want)}


def verdict(rel_err: dict, limit: float, against: str) -> dict:
    return {"against": against, "rel_err": rel_err, "limit": limit, "passed": max(rel_err.values()) <= limit}


def fp32_reference(layout, q, k, v, mask, grad_out) -> tuple:
    """``(out, dq, dk, dv)`` of ``torch_block_sparse_attention`` on fp32 copies of q, k, v (every
    batch row and head), same layout, mask and output gradient. Its autograd graph (fp32 gathered
    blocks: gigabytes at 64K x 12 heads) is freed before returning."""
    from bigbird_dna.attention import torch_block_sparse_attention

    ref_in = [x.detach().float().requires_grad_() for x in (q, k, v)]
    out = torch_block_sparse_attention(*ref_in, layout, mask)
    reference = (out.detach(), *torch.autograd.grad(out, ref_in, grad_out.float()))
    del out, ref_in
    release(q.device)
    return reference


def reference_gate(attn, q, k, v, grad_out, reference: tuple) -> tuple[dict, tuple]:
    """Ours against the fp32 reference (:func:`fp32_reference`): (verdict, ours' outputs)."""
    ours = step_outputs(attn, q, k, v, grad_out)
    return verdict(errors(ours, reference), gate_limit(q.dtype), "fp32 PyTorch backend"), ours


def gate_against(attn, q, k, v, grad_out, want: tuple, against: str) -> tuple[dict, tuple]:
    """``attn``'s step against ``want`` (out, dq, dk, dv); returns (verdict, its outputs)."""
    got = step_outputs(attn, q, k, v, grad_out)
    return verdict(errors(got, want), gate_limit(q.dtype), against), got


def release(device) -> None:
    """Return freed blocks to the driver between big allocations (gates, methods) on CUDA."""
    if is_gpu(device):
        sync(device)
        torch.cuda.empty_cache()


def measure_eager(attn, q, k, v, grad_out, iterations: int, repeats: int, whole_above_ms: float | None = None) -> dict:
    """Eager ``fwd``, ``bwd`` (of a retained graph) and ``fwd_bwd`` timings (each a
    ``timing.repeat_stats`` dict), their medians as ``*_ms``, the host time per forward+backward
    (``host_ms``, ``timing.host_ms``; CUDA only) and the peak MiB of one step.

    With ``whole_above_ms``, a step slower than that is timed whole only (``fwd_ms`` and
    ``bwd_ms`` None): dense attention at 64K takes 100-400 ms a step. Off CUDA each is one call
    and ``fwd_bwd_ms`` is the sum of the parts.
    """
    leaves, device = [q, k, v], q.device
    timing = {"device": device, "iterations": iterations, "repeats": repeats}

    def whole():
        attn(q, k, v).backward(grad_out)
    if not is_gpu(device):
        fwd = bench(lambda: attn(q, k, v), **timing)
        out = attn(q, k, v)
        bwd = bench(lambda: out.backward(grad_out, retain_graph=True), **timing)
        for x in leaves:
            x.grad = None
        return {"timing": {"fwd": fwd, "bwd": bwd}, "fwd_ms": fwd["ms"], "bwd_ms": bwd["ms"],
                "fwd_bwd_ms": fwd["ms"] + bwd["ms"], "peak_mib": None}
    row: dict = {"timing": {}}
    wall_s(whole, device)  # the first call builds plans (cuDNN, ours) and compiles: not the size of the job
    if whole_above_ms is None or wall_s(whole, device) * 1e3 <= whole_above_ms:
        row["timing"]["fwd"] = bench(lambda: attn(q, k, v), **timing)
        out = attn(q, k, v)
        row["timing"]["bwd"] = bench(lambda: out.backward(grad_out, retain_graph=True), grad_to_none=leaves, **timing)
        del out  # free the retained graph
    row["timing"]["fwd_bwd"] = bench(whole, grad_to_none=leaves, **timing)
    row["host_ms"] = host_ms(whole, device, iterations, grad_to_none=leaves)
    for x in leaves:
        x.grad = None
    row.update({f"{part}_ms": (row["timing"][part]["ms"] if part in row["timing"] else None)
                for part in ("fwd", "bwd", "fwd_bwd")})
    row["peak_mib"] = peak_mib(whole, device)
    for x in leaves:
        x.grad = None
    return row


def measure_graph(attn, q, k, v, grad_out, iterations: int, repeats: int, keep: list) -> dict:
    """The step captured in a CUDA graph: ``graph_fwd_bwd_ms`` (replay median) and its timing dict
    (``graph_timing``); ``graph_check``: the replay's outputs against an eager step's, within the
    gate's limit. A replay that disagrees keeps no timing (``graph_failed``). ``keep`` receives the
    graph, its outputs and ``attn``, alive to the end of the run (freeing graphs between captures
    broke a later capture once)."""
    def step():
        return step_outputs(attn, q, k, v, grad_out)
    try:
        graph, outputs = capture(step, q.device)
        keep.append((graph, outputs, attn))
        stats = bench(graph.replay, q.device, iterations, repeats)
        graph.replay()
        check = verdict(errors(outputs, step()), gate_limit(q.dtype), "eager step")
    except Exception as err:  # noqa: BLE001 - the eager timings stand without a replay
        return {"graph_failed": f"{type(err).__name__}: {err}"[:300]}
    if not check["passed"]:
        return {"graph_check": check, "graph_failed": "the replay disagrees with an eager step",
                "untrusted_graph_timing": stats}
    return {"graph_check": check, "graph_fwd_bwd_ms": stats["ms"], "graph_timing": stats}


class Recorder:
    """The rows of one (batch, seq) configuration, its inputs, and what the gates keep.

    ``inputs``: q, k, v ``[B, H, T, D]`` leaves; ``grad_out`` like q; ``ours`` and ``reference``:
    ``(out, dq, dk, dv)`` of our first variant and of the fp32 PyTorch backend (None until set).
    """

    def __init__(self, base: dict, inputs, grad_out, fwd_flop: float, args, graphs: list, started: float):
        self.base, self.inputs, self.grad_out, self.fwd_flop, self.args = base, inputs, grad_out, fwd_flop, args
        self.graphs, self.started = graphs, started
        self.rows: list[dict] = []
        self.ours = self.reference = self.layout = self.mask = None
        self.ours_name = None

    def over_budget(self) -> bool:
        return self.args.budget_s is not None and time.monotonic() - self.started > self.args.budget_s

    def measure(self, method: str, attn, gate=None, graph: bool = False, whole_above_ms=None, **extra) -> dict:
        """Time ``attn`` unless its ``gate`` (a verdict dict) failed; a string gate says why there is none."""
        row = dict(self.base, method=method, gate=gate, **extra)
        if isinstance(gate, dict) and not gate["passed"]:
            why = gate.get("error") or f"relative errors {gate['rel_err']} over {gate['limit']} vs {gate['against']}"
            row["failed"] = f"correctness gate: {why}"
            self.rows.append(row)
            print(f"  {method}: FAILED ({row['failed']})", file=sys.stderr, flush=True)
            return row
        a = self.args
        try:
            row.update(measure_eager(attn, *self.inputs, self.grad_out, a.iterations, a.repeats, whole_above_ms))
            if graph and is_gpu(self.inputs[0].device) and not a.no_graph:
                row.update(measure_graph(attn, *self.inputs, self.grad_out, a.iterations, a.repeats, self.graphs))
        except torch.OutOfMemoryError:
            row["skipped"] = "out of memory"
        release(self.inputs[0].device)
        for key, flop in (("fwd", self.fwd_flop), ("bwd", 2.5 * self.fwd_flop), ("fwd_bwd", 3.5 * self.fwd_flop),
                          ("graph_fwd_bwd", 3.5 * self.fwd_flop)):
            if row.get(f"{key}_ms"):
                row[f"{key}_tflops"] = flop / row[f"{key}_ms"] / 1e9
        if row.get("graph_fwd_bwd_ms"):
            row["eager_over_graph"] = row["fwd_bwd_ms"] / row["graph_fwd_bwd_ms"]
        self.rows.append(row)  # not before: a method that raises leaves only the caller's skipped row
        print(f"  {method}: {row.get('fwd_bwd_ms', row.get('skipped'))} ms", file=sys.stderr, flush=True)
        return row

    def skip(self, method: str, reason: str) -> None:
        self.rows.append(dict(self.base, method=method, skipped=reason))
        print(f"  {method}: skipped ({reason})", file=sys.stderr, flush=True)


def ensure_reference(rec: Recorder, layout, mask) -> bool:
    """Compute the fp32 reference outputs once per configuration; False if they do not fit in memory."""
    if rec.reference is None:
        try:
            rec.reference = fp32_reference(layout, *rec.inputs, mask, rec.grad_out)
        except torch.OutOfMemoryError:
            release(rec.inputs[0].device)
            return False
    return True
