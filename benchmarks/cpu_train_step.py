"""CPU training step of the tiny encoder: this tree's PyTorch attention backend against
the one at a git revision, side by side in one process.

One step is what ``python -m bigbird_dna.train experiment=pretrain_cpu`` ran per batch before
2026-11-29 (the recipe now trains the hybrid encoder), without the data loader: the tiny encoder
(2 x 128, 4 heads, RoPE, BigBird-ITC block 32, 16 blocks) on 8 x 512 char tokens, the MLM loss
on 15% of them, backward, AdamW. The two backends alternate step by step (``--rounds`` rounds of
``--steps`` steps each), so load on the machine hits both alike; the report gives the median
seconds per step and their ratio.

    python benchmarks/cpu_train_step.py --ref 37f0722   # benchmarks/results/<date>_<machine>/cpu_train_step.json
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import types
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.harness import alternating_rounds, rounds_report, save_report  # noqa: E402
from benchmarks.common.results import add_out_argument  # noqa: E402
from bigbird_dna.model import encoder as encoder_module  # noqa: E402
from bigbird_dna.tasks.mlm import MLMTask  # noqa: E402

MODEL = {"vocab_size": 16, "hidden_size": 128, "num_layers": 2, "num_heads": 4, "intermediate_size": 512,
         "max_positions": 512, "dropout": 0.1, "position": "rope",
         "attention": {"preset": "bigbird_itc", "block_size": 32,
                       "params": {"window": 3, "num_random": 3, "global_per_end": 1}}}
BACKEND_PATH = "bigbird_dna/attention/torch_backend.py"


def backend_at(revision: str):
    """``torch_block_sparse_attention`` as it was at git ``revision``."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{revision}:{BACKEND_PATH}"], check=True,
                            capture_output=True, text=True).stdout
    module = types.ModuleType(f"torch_backend_{revision}")
    exec(compile(source, f"{revision}:{BACKEND_PATH}", "exec"), module.__dict__)
    return module.torch_block_sparse_attention


def use_backend(function) -> None:
    """Route the encoder's attention through ``function`` (the torch backend signature)."""
    encoder_module.block_sparse_attention = (
        lambda q, k, v, layout, key_padding_mask=None, scale=None, backend="auto":
        function(q, k, v, layout, key_padding_mask=key_padding_mask, scale=scale))


def make_batch(batch: int, length: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    ids = torch.randint(5, 16, (batch, length), generator=generator)
    selected = torch.rand(batch, length, generator=generator) < 0.15
    labels = torch.where(selected, ids, torch.full_like(ids, -100))
    return {"input_ids": ids.masked_fill(selected, 4), "labels": labels,
            "attention_mask": torch.ones(batch, length, dtype=torch.bool)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="HEAD", help="git revision of the backend to compare with")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    add_out_argument(parser, "cpu_train_step")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    task = MLMTask(MODEL, {"lr": 1e-3})
    optimizer = torch.optim.AdamW(task.parameters(), lr=1e-3)
    generator = torch.Generator().manual_seed(0)
    backends = {"this_tree": encoder_module.block_sparse_attention, args.ref: backend_at(args.ref)}

    def step_with(function) -> None:
        use_backend(function)
        loss, _, _ = task._masked_loss(make_batch(args.batch, args.length, generator))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    steps = {name: (lambda f=function: step_with(f)) for name, function in backends.items()}
    for step in steps.values():  # warm-up
        step()
        step()
    timings = alternating_rounds(steps, args.rounds, args.steps)
    report = rounds_report("cpu_train_step", timings, __file__, argv, model=MODEL, batch=args.batch,
                           length=args.length)
    median = report["seconds_per_step"]
    report[f"speedup_over_{args.ref}"] = median[args.ref] / median["this_tree"]
    for name, value in median.items():
        print(f"{name:>12}: {value:.3f} s/step")
    print(f"speed-up over {args.ref}: {report[f'speedup_over_{args.ref}']:.2f}x")
    save_report(report, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
