"""Does pretraining pay off downstream? Promoter AUROC from a pretrained backbone vs from scratch.

Plants ``--num`` promoters into the bundled H. pylori genome (as the promoter demo does), then, for
each seed, fine-tunes ``experiment=promoter_sample`` twice with the same tokenizer (char, the
default), model and steps: once from ``--backbone`` (an MLM export, e.g. of
``experiment=pretrain_cpu``) and once from scratch. Records val and test AUROC per seed and the
means in ``promoter_pretrain.json`` (default: in ``benchmarks/results/<date>_<machine>/``).

    python -m bigbird_dna.train experiment=pretrain_cpu hydra.run.dir=outputs/pretrain_cpu
    python benchmarks/promoter_pretrain.py --backbone outputs/pretrain_cpu/export --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, repo_command, write_json  # noqa: E402
from benchmarks.mlm_recipe import machine  # noqa: E402


def finetune(out: Path, planted: Path, seed: int, steps: int, backbone: Path | None) -> dict:
    run_dir = out / f"{'pretrained' if backbone else 'scratch'}-seed{seed}"
    cmd = [sys.executable, "-m", "bigbird_dna.train", "experiment=promoter_sample", f"seed={seed}",
           f"data.fasta={planted}.fa", f"data.bed={planted}.bed", f"trainer.max_steps={steps}",
           f"hydra.run.dir={run_dir}"]
    if backbone:
        cmd.append(f"task.backbone={backbone}")
    started = time.monotonic()
    subprocess.run(cmd, check=True, cwd=REPO)
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"seed": seed, "val_auroc": summary.get("val/auroc"), "test_auroc": summary.get("test/auroc"),
            "seconds": round(time.monotonic() - started, 1), "command": repo_command(["python", *cmd[1:]])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backbone", type=Path, required=True, help="MLM export folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--num", type=int, default=600, help="planted promoters")
    parser.add_argument("--work", type=Path, default=REPO / "outputs" / "promoter_pretrain")
    add_out_argument(parser, "promoter_pretrain")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    planted = args.work / "planted"
    subprocess.run([sys.executable, "-m", "bigbird_dna.demo.synthetic_promoters", "--fasta",
                    str(REPO / "sample_data" / "h_pylori_F32.fa"), "--num", str(args.num),
                    "--out-prefix", str(planted)],
                   check=True, cwd=REPO)
    runs = {"pretrained": [finetune(args.work, planted, s, args.steps, args.backbone.resolve()) for s in args.seeds],
            "scratch": [finetune(args.work, planted, s, args.steps, None) for s in args.seeds]}
    means = {name: statistics.mean(r["val_auroc"] for r in rows) for name, rows in runs.items()}
    result = {"backbone": str(args.backbone), "steps": args.steps, "machine": machine(), "runs": runs,
              "mean_val_auroc": means, "pretrained_beats_scratch": means["pretrained"] > means["scratch"]}
    write_json(args.out or default_out("promoter_pretrain", device="auto"), result)
    print(json.dumps({"mean_val_auroc": means}, indent=2))


if __name__ == "__main__":
    main()
