"""CPU training step of the tiny encoder, eager against ``compile_layers``, side by side.

One step is what ``python -m bigbird_dna.train experiment=pretrain_cpu`` ran per batch before
2026-11-29 (the recipe now trains the hybrid encoder), without the data loader: the default tiny
encoder (2 x 128, 4 heads, RoPE, a depthwise convolution of width 9, BigBird-ITC block 32) on
8 x 512 char tokens, the MLM loss on 15% of them, backward, AdamW. Two copies of the same initial
model, one with ``BigBirdEncoder.compile_layers`` (Inductor: a C++ build on CPU), alternate round
by round (``--rounds`` x ``--steps``), so load on the machine hits both alike. Reported: the
median seconds per step of each, their ratio, and the seconds the compiled copy's first step took
(the compile).

    python benchmarks/cpu_compile_step.py   # benchmarks/results/<date>_<machine>/cpu_compile_step.json
"""
from __future__ import annotations

import argparse
import copy
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.harness import alternating_rounds, rounds_report, save_report  # noqa: E402
from benchmarks.common.results import add_out_argument  # noqa: E402
from benchmarks.cpu_train_step import MODEL, make_batch  # noqa: E402
from bigbird_dna.tasks.mlm import MLMTask  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--backend", default="inductor", help="torch.compile backend")
    add_out_argument(parser, "cpu_compile_step")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    model = {**MODEL, "conv_kernel": 9}
    eager = MLMTask(model, {"lr": 1e-3})
    tasks = {"eager": eager, "compiled": copy.deepcopy(eager)}
    tasks["compiled"].encoder.compile_layers(backend=args.backend)
    optimizers = {name: torch.optim.AdamW(task.parameters(), lr=1e-3) for name, task in tasks.items()}
    generator = torch.Generator().manual_seed(0)

    def step(name: str) -> float:
        loss, _, _ = tasks[name]._masked_loss(make_batch(args.batch, args.length, generator))
        optimizers[name].zero_grad()
        loss.backward()
        optimizers[name].step()
        return loss.item()

    first_step_s = {}
    for name in tasks:  # warm-up; the compiled copy compiles here
        start = time.perf_counter()
        step(name)
        first_step_s[name] = time.perf_counter() - start
        step(name)
    timings = alternating_rounds({name: (lambda n=name: step(n)) for name in tasks}, args.rounds, args.steps)
    report = rounds_report("cpu_compile_step", timings, __file__, argv, model=model, batch=args.batch,
                           length=args.length, compile_backend=args.backend, first_step_s=first_step_s)
    median = report["seconds_per_step"]
    report["compiled_speedup"] = median["eager"] / median["compiled"]
    for name, value in median.items():
        print(f"{name:>9}: {value:.3f} s/step (first step {first_step_s[name]:.1f} s)")
    print(f"compiled over eager: {report['compiled_speedup']:.2f}x")
    save_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
