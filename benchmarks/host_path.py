"""Host time of our attention call without a GPU: everything but the kernels, timed on the CPU.

An eager forward+backward is host-bound when its Python path (input checks, the cached work plans,
scratch buffers, the launcher's cache key, autograd) takes longer than the kernels run on the GPU
(0.127 ms for 12 heads at 4K on an H100, from the CUDA-graph replays). This times that path on
any machine: each kernel launcher gets a stand-in compiled kernel whose launch does nothing, so a
call costs exactly its host work, launches included up to the driver call. Shapes are the suite's
(batch 1, 12 heads of 64, BigBird-ITC block 64, bf16 tensors on the CPU); the outputs are
meaningless. Reported: the median microseconds of the forward, the backward and both, and the
launches per call.

Not a GPU host's figure: the developers' 2-core machine is slower than a GPU server's cores, so
read it as an upper bound for the same Python path.

    python benchmarks/host_path.py   # benchmarks/results/<date>_<machine>/host_path.json
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import torch

if os.environ.get("TRITON_INTERPRET") == "1":
    raise SystemExit("error: unset TRITON_INTERPRET: this times the compiled-kernel launch path, with stand-ins")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.attention import bigbird_layout  # noqa: E402
from benchmarks.common.harness import environment, save_report  # noqa: E402
from benchmarks.common.results import add_out_argument, script_command  # noqa: E402
from bigbird_dna.attention import triton_kernels, triton_launch  # noqa: E402


class _NoLaunch:
    """A compiled kernel as ``KernelLauncher`` uses it, whose launch does nothing."""

    function, packed_metadata = None, None

    def launch_metadata(self, grid, stream, *args):
        return None

    def run(self, *args):
        return None


class _StandInJIT:
    """``fn[grid](...)`` of a ``@triton.jit`` kernel, returning the stand-in instead of compiling."""

    def __init__(self, kernel):
        self.params = kernel.params

    def __getitem__(self, grid):
        return lambda *args, **options: _NoLaunch()


def use_stand_ins() -> list:
    """Point every launcher of ``triton_kernels`` at stand-in kernels and a stand-in driver."""
    active = SimpleNamespace(get_current_device=lambda: 0, get_current_stream=lambda device: 0)
    triton_launch.driver = SimpleNamespace(active=active)
    launchers = [v for v in vars(triton_kernels).values() if isinstance(v, triton_launch.KernelLauncher)]
    for launcher in launchers:
        launcher.fn, launcher.param_names = _StandInJIT(launcher.fn), tuple(p.name for p in launcher.fn.params)
        launcher.compiled.clear()
    return launchers


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384])
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--variant", default=None, help="kernel variant (default: the default one)")
    add_out_argument(parser, "host_path")
    args = parser.parse_args(argv)
    launchers = use_stand_ins()
    rows = []
    for seq in args.seq:
        layout = bigbird_layout(args.heads, seq, 64, "cpu")
        q, k, v = (torch.empty(1, args.heads, seq, 64, dtype=torch.bfloat16).requires_grad_() for _ in range(3))
        grad = torch.empty(1, args.heads, seq, 64, dtype=torch.bfloat16)
        fwd, bwd = [], []
        for step in range(args.steps + 3):  # 3 warm-up calls build the plans and keep the stand-ins
            before = sum(launcher.direct_launches for launcher in launchers)
            start = time.perf_counter()
            out = triton_kernels.triton_block_sparse_attention(q, k, v, layout, options=args.variant)
            middle = time.perf_counter()
            torch.autograd.grad(out, (q, k, v), grad)
            end = time.perf_counter()
            launches = sum(launcher.direct_launches for launcher in launchers) - before
            if step >= 3:
                fwd.append((middle - start) * 1e6)
                bwd.append((end - middle) * 1e6)
        both = [a + b for a, b in zip(fwd, bwd)]
        rows.append({"seq": seq, "heads": args.heads, "fwd_us": statistics.median(fwd),
                     "bwd_us": statistics.median(bwd), "fwd_bwd_us": statistics.median(both),
                     "fwd_bwd_us_quartiles": statistics.quantiles(both, n=4), "launches_per_call": launches})
        print(f"T={seq}: forward {rows[-1]['fwd_us']:.0f} us, backward {rows[-1]['bwd_us']:.0f} us, "
              f"both {rows[-1]['fwd_bwd_us']:.0f} us, {launches} direct launches per forward+backward")
    report = {"benchmark": "host_path", "variant": args.variant or "default", "steps": args.steps, "rows": rows,
              "command": script_command(__file__, argv), "environment": environment("cpu")}
    save_report(report, args.out)
    return report


if __name__ == "__main__":
    main()
