"""Where the host time of one attention forward+backward goes (CUDA only).

The CUDA-graph replays of ``attention.py`` show that an eager call of ours at 4K-16K tokens is
bound by the host (about 0.9 ms against 0.13-0.42 ms of GPU work). This profiles ``--steps`` eager steps (forward,
then ``torch.autograd.grad`` of q, k, v) with ``torch.profiler`` and prints the operators (by self
CPU time) and the Python functions (``cProfile``, by own time), plus the wall time per step, so
that the host cost can be cut where it is spent.

    python benchmarks/host_profile.py --seq 4096   # benchmarks/results/<date>_<machine>/host_profile-4096.json
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--variant", default="preload-fused")
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rows", type=int, default=30, help="profiler rows printed and saved")
    add_out_argument(parser, "host_profile-<seq>")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        raise SystemExit("error: host_profile needs CUDA (it profiles the compiled kernels' launches)")
    from torch.profiler import ProfilerActivity, profile

    from benchmarks.attention import bigbird_layout
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    layout = bigbird_layout(args.heads, args.seq, 64, "cuda")
    q, k, v = (torch.randn(1, args.heads, args.seq, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    grad_out = torch.randn_like(q)

    def step():
        out = triton_block_sparse_attention(q, k, v, layout, None, options=args.variant)
        return torch.autograd.grad(out, (q, k, v), grad_out)

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    host_ms = (time.perf_counter() - start) * 1e3 / args.steps  # host issue rate (GPU runs behind)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU], with_stack=False) as prof:
        for _ in range(args.steps):
            step()
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=args.rows)
    python_profile = cProfile.Profile()
    python_profile.runcall(lambda: [step() for _ in range(args.steps)])
    torch.cuda.synchronize()
    text = io.StringIO()
    pstats.Stats(python_profile, stream=text).sort_stats("tottime").print_stats(args.rows)
    print(f"T={args.seq} {args.variant}: {host_ms:.3f} ms of host time per step (unprofiled)")
    print(table)
    print(text.getvalue())
    result = {"benchmark": "host_profile", "device": torch.cuda.get_device_name(), "torch": torch.__version__,
              "seq": args.seq, "variant": args.variant, "steps": args.steps, "host_ms_per_step": host_ms,
              "python_tottime": text.getvalue(),
              "ops": [{"name": e.key, "calls_per_step": e.count / args.steps,
                       "self_cpu_us_per_step": e.self_cpu_time_total / args.steps}
                      for e in sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:args.rows]],
              "command": script_command(__file__, argv)}
    write_json(args.out or default_out(f"host_profile-{args.seq}", device="cuda"), result)
    return result


if __name__ == "__main__":
    main()
