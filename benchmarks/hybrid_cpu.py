"""CPU forward-pass throughput of the hybrid encoder (``model=hybrid_tiny``) against the tiny one.

    python benchmarks/hybrid_cpu.py [--batch 8] [--repeats 5]

Builds each encoder of ``conf/model/`` with its MLM head (char tokens, untrained weights: speed
does not depend on them), in eval mode, fp32, and times forward passes (``torch.inference_mode``,
the torch attention backend) over random bases: ``tiny`` at its whole window (510 bp),
``hybrid_tiny`` at the same 510 bp and at its whole window ((512 - 2) * 4 = 2040 bp, the stem
pooling 4 bases per BigBird token), taking turns. Reports the median seconds per batch, bases per second and the
window each reads. Results: ``hybrid_cpu.json`` in ``benchmarks/results/<date>_<machine>/``. Run it
on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402
from benchmarks.planted_motif import model_config  # noqa: E402
from bigbird_dna.model.networks import MaskedLanguageModel  # noqa: E402
from bigbird_dna.runtime.malloc import keep_freed_memory  # noqa: E402

CASES = (("tiny", 510), ("hybrid_tiny", 510), ("hybrid_tiny", 2040))


def time_forwards(batch: int, repeats: int) -> list[dict]:
    """Median seconds of ``repeats`` forward passes (after one warm-up) of ``batch`` rows of each
    case of :data:`CASES`, the cases taking turns so that a busy spell of the machine hits all."""
    cases = []
    for name, bases in CASES:
        torch.manual_seed(0)
        config = model_config(name)
        ids = torch.randint(5, 9, (batch, bases + 2))  # [CLS] bases [SEP]; ids 5..8 are bases
        ids[:, 0], ids[:, -1] = 2, 3
        cases.append((name, bases, config, MaskedLanguageModel(config).eval(), ids, []))
    with torch.inference_mode():
        for round_ in range(repeats + 1):
            for *_, model, ids, seconds in cases:
                started = time.perf_counter()
                model(ids, None)
                if round_:  # round 0 warms up
                    seconds.append(time.perf_counter() - started)
    return [{"model": name, "bases_per_row": bases, "window_bp": config.max_input_tokens - 2,
             "bigbird_tokens_per_row": 2 + -(-bases // config.pool), "batch": batch,
             "median_s_per_batch": round(statistics.median(seconds), 4),
             "bases_per_s": round(batch * bases / statistics.median(seconds)),
             "parameters": sum(p.numel() for p in model.parameters())}
            for name, bases, config, model, _, seconds in cases]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=15)
    add_out_argument(parser, "hybrid_cpu")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as the CLIs do
    before = machine()
    runs = time_forwards(args.batch, args.repeats)
    print(json.dumps(runs, indent=1))
    result = {"benchmark": "hybrid_cpu", "precision": "fp32", "backend": "torch", "threads": torch.get_num_threads(),
              "runs": runs, "machine_before": before, "machine_after": machine(),
              "command": script_command(__file__, argv)}
    return write_json(args.out or default_out("hybrid_cpu"), result)


if __name__ == "__main__":
    main()
