"""Host overhead of one attention forward+backward: eager calls against a CUDA-graph replay.

At 4K and 16K tokens a BigBird attention step is well under a millisecond of GPU work, so an eager
call can be bound by the host (Python, autograd, launches) rather than by the kernels. This times
the same step (forward, then ``torch.autograd.grad`` of q, k, v) two ways, side by side, for ours
and for FlexAttention on the same 64-token BlockMask:

- ``eager_ms``: ``triton.testing.do_bench`` of the call;
- ``graph_ms``: ``do_bench`` of ``CUDAGraph.replay()`` of the same call captured once (the GPU
  time with no host in the way).

``eager_ms / graph_ms`` near 1 means kernel-bound; well above 1 means host-bound.

    python benchmarks/graph_overhead.py --out benchmarks/results/graph_overhead.json   # CUDA only
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def captured(step):
    """Warm ``step`` on a side stream, capture it in a CUDA graph; returns the graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384, 65536])
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--variants", nargs="+", default=["loop", "preload-fused"])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("error: graph_overhead needs CUDA (it times CUDA-graph replays)")
    import triton.testing
    from torch.nn.attention.flex_attention import flex_attention

    from benchmarks.attention import bigbird_layout
    from benchmarks.attention_baselines import flex_backward_tiles, flex_block_mask
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    rows = []
    for seq in args.seq:
        layout = bigbird_layout(args.heads, seq, 64, "cuda")
        q, k, v = (torch.randn(1, args.heads, seq, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                   for _ in range(3))
        grad_out = torch.randn_like(q)
        methods = {f"triton:{name}": (lambda q, k, v, name=name: triton_block_sparse_attention(
            q, k, v, layout, None, options=name)) for name in args.variants}
        torch._dynamo.reset()
        block_mask = flex_block_mask(layout, seq)
        flex = torch.compile(flex_attention, dynamic=False)
        methods["flex"] = lambda q, k, v: flex(q, k, v, block_mask=block_mask,
                                               kernel_options={"BLOCK_M": 64, "BLOCK_N": 64})
        for name, attn in methods.items():
            def step(attn=attn):
                return torch.autograd.grad(attn(q, k, v), (q, k, v), grad_out)
            row = {"seq": seq, "heads": args.heads, "method": name}
            try:
                with flex_backward_tiles(64):
                    step()
                row["eager_ms"] = triton.testing.do_bench(step, return_mode="median")
                graph = captured(step)
                row["graph_ms"] = triton.testing.do_bench(graph.replay, return_mode="median")
                row["eager_over_graph"] = row["eager_ms"] / row["graph_ms"]
            except Exception as err:  # noqa: BLE001 - reported, not fatal
                row["failed"] = f"{type(err).__name__}: {err}"[:300]
            rows.append(row)
            print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text(json.dumps({"benchmark": "graph_overhead", "device": torch.cuda.get_device_name(),
                                        "torch": torch.__version__, "results": rows}, indent=2))
    return rows


if __name__ == "__main__":
    main()
