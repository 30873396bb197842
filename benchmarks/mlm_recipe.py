"""Record an MLM pretraining run's honest numbers in ``mlm_recipe.json`` (default: in
``benchmarks/results/<date>_<machine>/``).

Runs ``python -m bigbird_dna.train`` with the given overrides (or reads a finished run directory
with ``--run-dir``), then appends one entry: label, command, machine, steps, wall time, honest val
(and test, when present) bits/base at [MASK] inputs, and the train-unigram, causal and
bidirectional k-mer baselines on the same bases. These entries are the measurements behind the
defaults of ``conf/`` (README, "Measured recipes").

    python benchmarks/mlm_recipe.py --label default -- tokenizer=char
    python benchmarks/mlm_recipe.py --label pretrain_cpu --run-dir outputs/mlm/runs/<date> --command "..."
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common.results import add_out_argument, default_out, repo_command, write_json  # noqa: E402

KEYS = ("bits_per_base", "loss", "acc", "bp_per_token", "baseline/unigram_bits_per_base",
        "baseline/markov_causal_bits_per_base", "baseline/markov_bidirectional_bits_per_base",
        "baseline/unigram_loss", "baseline/markov_causal_loss", "baseline/markov_bidirectional_loss")


def machine() -> dict:
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus_available": len(os.sched_getaffinity(0)), "python": platform.python_version()}


def entry(label: str, command: str, summary: dict, wall_s: float | None) -> dict:
    out = {"label": label, "command": command, "machine": machine(), "date": time.strftime("%Y-%m-%d"),
           "steps": summary.get("global_step"), "wall_s": wall_s or summary.get("seconds"),
           "markov_causal_order": summary.get("markov_causal_order"),
           "markov_bidirectional_order": summary.get("markov_bidirectional_order")}
    for split in ("val", "test"):
        values = {key: summary[f"{split}/{key}"] for key in KEYS if f"{split}/{key}" in summary}
        if "bits_per_base" in values:
            values["beats_unigram_by"] = values["baseline/unigram_bits_per_base"] - values["bits_per_base"]
            values["beats_causal_kmer_by"] = values["baseline/markov_causal_bits_per_base"] - values["bits_per_base"]
        if values:
            out[split] = values
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--label", required=True)
    parser.add_argument("--run-dir", type=Path, help="a finished run to record instead of running one")
    parser.add_argument("--command", default=None, help="the command that made --run-dir")
    add_out_argument(parser, "mlm_recipe")
    parser.add_argument("--note", default="", help="e.g. how loaded the machine was")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides for bigbird_dna.train")
    args = parser.parse_args(argv)
    wall = None
    if args.run_dir is None:
        args.run_dir = Path("outputs") / "mlm_recipe" / f"{args.label}-{time.strftime('%Y%m%d-%H%M%S')}"
        cmd = [sys.executable, "-m", "bigbird_dna.train", f"hydra.run.dir={args.run_dir}", *args.overrides]
        started = time.monotonic()
        subprocess.run(cmd, check=True)
        wall = time.monotonic() - started
        args.command = "python -m bigbird_dna.train " + " ".join(args.overrides)
    summary = json.loads((args.run_dir / "summary.json").read_text())
    out = args.out or default_out("mlm_recipe", device="auto")
    results = json.loads(out.read_text()) if out.exists() else []
    results.append({**entry(args.label, repo_command(args.command or ""), summary, wall), "note": args.note})
    write_json(out, results)
    print(json.dumps(results[-1], indent=2))


if __name__ == "__main__":
    main()
