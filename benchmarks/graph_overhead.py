"""Host overhead of one attention forward+backward: eager calls against a CUDA-graph replay.

At 4K and 16K tokens a BigBird attention step is well under a millisecond of GPU work, so an eager
call can be bound by the host (Python, autograd, launches) rather than by the kernels. This times
the same step (forward, then ``torch.autograd.grad`` of q, k, v) two ways, side by side, for ours
and for FlexAttention on the same 64-token BlockMask:

- ``eager_ms``: ``triton.testing.do_bench`` of the call;
- ``graph_ms``: ``do_bench`` of ``CUDAGraph.replay()`` of the same call captured once (the GPU
  time with no host in the way).

``eager_ms / graph_ms`` near 1 means kernel-bound; well above 1 means host-bound. A method that
computes the wrong thing gets no timing (its row says ``failed``): each of our variants must match
the fp32 PyTorch backend (output and the three gradients, batch 0, two heads), Flex must match our
first variant, and each replay must reproduce the eager results, within 2% relative error (bf16).
These checks run after the last capture at each length, so that no eager work sits between captures.

    python benchmarks/graph_overhead.py --out benchmarks/results/graph_overhead.json   # CUDA only
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks.harness import relative_error

GATE = 2e-2  # largest relative error (bf16) of an output or gradient before a method is not timed


def captured(step):
    """Warm ``step`` on a side stream, capture it in a CUDA graph; returns (graph, its outputs)."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        outputs = step()
    return graph, outputs


def errors(got, want) -> dict:
    """Relative errors of (out, dq, dk, dv) ``got`` against ``want``."""
    return {name: relative_error(a, b) for name, a, b in zip(("out", "dq", "dk", "dv"), got, want)}


def time_method(step, graphs: list) -> dict:
    """Eager and graph-replay ms of ``step`` (returns out, dq, dk, dv); the captured graph and its
    outputs are appended to ``graphs`` (kept alive until every capture of the run is done)."""
    import triton.testing

    step()
    row = {"eager_ms": triton.testing.do_bench(step, return_mode="median")}
    graph, outputs = captured(step)
    graphs.append((graph, outputs))
    row["graph_ms"] = triton.testing.do_bench(graph.replay, return_mode="median")
    row["eager_over_graph"] = row["eager_ms"] / row["graph_ms"]
    return row


def gate(row: dict, rel_err: dict, what: str) -> None:
    """Record ``rel_err`` in ``row``; over ``GATE``, move its timings out of use as a failure."""
    row[f"{what}_rel_err"] = rel_err
    if max(rel_err.values()) > GATE and "failed" not in row:
        row["untrusted_timings"] = {key: row.pop(key) for key in ("eager_ms", "graph_ms", "eager_over_graph")}
        row["failed"] = f"{what}: relative errors {rel_err} over {GATE}"


def measure_seq(seq: int, heads: int, variants: list[str], graphs: list) -> list[dict]:
    """Rows of our variants and Flex at ``seq`` tokens, timed, then checked (the checks run after
    the last capture at this length: no eager work sits between captures)."""
    from benchmarks.attention import bigbird_layout, correctness_gate
    from benchmarks.attention_baselines import compiled_flex
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    layout = bigbird_layout(heads, seq, 64, "cuda")
    q, k, v = (torch.randn(1, heads, seq, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad_out = torch.randn_like(q)

    def stepper(attn):
        def step():
            out = attn(q, k, v)
            return (out, *torch.autograd.grad(out, (q, k, v), grad_out))
        return step

    methods = {f"triton:{name}": functools.partial(triton_block_sparse_attention, layout=layout, options=name)
               for name in variants}
    try:  # compiled before any capture
        methods["flex"] = compiled_flex(layout, (q, k, v), seq)[0]
    except Exception as err:  # noqa: BLE001 - reported, not fatal
        methods["flex"] = err
    rows, checks = [], []
    for name, attn in methods.items():
        row = {"seq": seq, "heads": heads, "method": name}
        rows.append(row)
        if isinstance(attn, Exception):
            row["failed"] = f"{type(attn).__name__}: {attn}"[:300]
            continue
        step = stepper(attn)
        try:
            row.update(time_method(step, graphs))
        except Exception as err:  # noqa: BLE001 - reported, not fatal
            row["failed"] = f"{type(err).__name__}: {err}"[:300]
            continue
        graph, outputs = graphs[-1]
        if name == "flex":  # Flex against our first variant on the same inputs
            reference = stepper(methods[f"triton:{variants[0]}"])
            checks.append(lambda row=row, step=step, ref=reference: gate(row, errors(step(), ref()), "vs_ours"))
        else:  # ours against the fp32 PyTorch backend (batch 0, two heads), as attention.py gates it
            options = {"options": name.split(":", 1)[1]}
            checks.append(lambda row=row, o=options: gate(row, correctness_gate(layout, q, k, v, None, o), "reference"))
        checks.append(lambda row=row, step=step, graph=graph, outputs=outputs: (
            graph.replay(), gate(row, errors(outputs, step()), "replay_vs_eager")))
    for check in checks:
        check()
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384, 65536])
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--variants", nargs="+", default=["loop", "preload-fused"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("error: graph_overhead needs CUDA (it times CUDA-graph replays)")
    graphs: list = []  # every captured graph stays alive until the end of the run
    rows = []
    for seq in args.seq:
        rows += measure_seq(seq, args.heads, args.variants, graphs)
        for row in rows[-len(args.variants) - 1:]:
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"benchmark": "graph_overhead", "device": torch.cuda.get_device_name(),
                                        "torch": torch.__version__, "gate": GATE, "results": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main()
