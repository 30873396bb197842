"""Do attributions find what was planted? A classifier trained with the defaults on a planted-motif
task, explained on held-out positives, then TF-MoDISco + TOMTOM against JASPAR.

    python benchmarks/explain_planted.py [--motifs MA0139 MA0148] [--num 2000] [--method integrated_gradients]
        [--train-override model=hybrid_tiny ...]

Steps, all through the command lines a user runs:

1. ``python -m bigbird_dna.motifs plant --rule one_of``: every positive carries one sampled
   instance of one motif of ``--motifs`` (JASPAR IDs), so the model must learn each of them
   (``--rule presence``: one of each, where learning one suffices); negatives are plain windows of
   the bundled *H. pylori* genome; 200 bp, 80/10/10 split.
2. ``python -m bigbird_dna.train task=promoter data=promoter_labelled`` on it (the defaults, plus
   any ``--train-override``); its summary's test AUROC and the baselines'.
3. ``python -m bigbird_dna.explain`` on the test positives (a FASTA, each record explained whole)
   with ``--h5``: per-letter attributions as TF-MoDISco reads them.
4. **Top-k**: for each test positive, the share of its ``k`` highest per-base attributions that
   fall inside a planted site, ``k`` = the planted bases of that sequence; the mean over positives.
   The same for a model with the same architecture that learned nothing (the export's layers
   re-initialised) and the expectation of a random ranking (planted bases / length).
5. ``python -m bigbird_dna.motifs learn`` on the attribution file: the best JASPAR match of each
   pattern, and whether each planted motif is some pattern's best match.

Results: ``explain_planted.json``, with ``-report.md`` and ``-patterns.json`` (the learn report)
and ``-<name>.png`` (ISM figures of two test positives, their planted sites in ``-sites.bed``),
in ``benchmarks/results/<date>_<machine>/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402


def cli(*args: str, cwd: Path) -> float:
    """Run ``python -m ...`` in ``cwd``; its seconds."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", *args], cwd=cwd, capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed:\n{result.stderr[-3000:]}")
    return round(time.perf_counter() - started, 1)


def test_positives(task: Path) -> tuple[list[str], list[str], dict[str, list[tuple[int, int]]]]:
    """Names and sequences of the test split's positives, and each one's planted sites (0-based)."""
    with open(task / "test.tsv") as handle:
        rows = [r for r in csv.DictReader(handle, delimiter="\t") if r["label"] == "1"]
    sites: dict[str, list[tuple[int, int]]] = {}
    for line in open(task / "sites.bed"):
        name, start, end = line.split("\t")[:3]
        sites.setdefault(name, []).append((int(start), int(end)))
    return [r["name"] for r in rows], [r["sequence"] for r in rows], sites


def top_k_inside(per_base: np.ndarray, names: list[str], sites: dict[str, list[tuple[int, int]]]) -> dict:
    """Mean share of each sequence's top-k bases inside its sites (k = its planted bases)."""
    shares, expected = [], []
    for row, name in zip(per_base, names):
        inside = np.zeros(len(row), dtype=bool)
        for start, end in sites[name]:
            inside[start:end] = True
        k = int(inside.sum())
        top = np.argsort(-np.nan_to_num(row, nan=-np.inf))[:k]
        shares.append(float(inside[top].mean()))
        expected.append(k / len(row))
    return {"mean_share_in_sites": round(float(np.mean(shares)), 4), "sequences": len(shares),
            "random_ranking_expectation": round(float(np.mean(expected)), 4)}


def untrained_per_base(export: Path, seqs: list[str], method: str) -> np.ndarray:
    """Per-base attributions of the same architecture with its layers re-initialised (seed 0)."""
    import torch

    from bigbird_dna import BigBirdDNA

    model = BigBirdDNA.from_pretrained(export, device="cpu")
    torch.manual_seed(0)
    for module in model.module.modules():
        if module is not model.module and hasattr(module, "reset_parameters"):
            module.reset_parameters()
    return model.attribute(seqs, method=method, batch_size=16).numpy()


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--motifs", nargs="+", default=["MA0139", "MA0148"])
    parser.add_argument("--rule", default="one_of", choices=("one_of", "presence"))
    parser.add_argument("--num", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--method", default="integrated_gradients")
    parser.add_argument("--jaspar-taxon", default="vertebrates")
    parser.add_argument("--train-override", action="append", default=[])
    add_out_argument(parser, "explain_planted")
    args = parser.parse_args(argv)
    out = args.out or default_out("explain_planted")
    before = machine()
    seconds = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        motif_args = [a for m in args.motifs for a in ("--motif", m)]
        seconds["plant"] = cli("bigbird_dna.motifs", "plant", "--rule", args.rule, *motif_args, "--num",
                               str(args.num), "--seed", str(args.seed), "--out", "task", cwd=work)
        seconds["train"] = cli("bigbird_dna.train", "task=promoter", "data=promoter_labelled",
                               "data.train=task/train.tsv", "data.val=task/val.tsv", "data.test=task/test.tsv",
                               f"seed={args.seed}", "hydra.run.dir=run", *args.train_override, cwd=work)
        summary = json.loads((work / "run" / "summary.json").read_text())
        names, seqs, sites = test_positives(work / "task")
        (work / "positives.fa").write_text("".join(f">{n}\n{s}\n" for n, s in zip(names, seqs)))
        seconds["explain"] = cli("bigbird_dna.explain", "--model", "run/export", "positives.fa", "--method",
                                 args.method, "--h5", "positives.h5", "--no-progress", "--device", "cpu", cwd=work)
        # the figures of the docs' worked example: the first two test positives, ISM heatmap included
        (work / "first.fa").write_text("".join(f">{n}\n{s}\n" for n, s in list(zip(names, seqs))[:2]))
        seconds["figures"] = cli("bigbird_dna.explain", "--model", "run/export", "first.fa", "--method", "ism",
                                 "--png-dir", "figures", "--no-progress", "--device", "cpu", cwd=work)
        from bigbird_dna.motifs.attributions import read_attributions

        data = read_attributions(work / "positives.h5")
        per_base = (data.attributions * data.sequences).sum(1)  # [N, L]: the observed letters
        trained = top_k_inside(per_base, names, sites)
        untrained = top_k_inside(untrained_per_base(work / "run" / "export", seqs, args.method), names, sites)
        seconds["learn"] = cli("bigbird_dna.motifs", "learn", "positives.h5", "--out", "report", "--jaspar-taxon",
                               args.jaspar_taxon, cwd=work)
        patterns = json.loads((work / "report" / "patterns.json").read_text())
        # flat, beside the JSON (the results layout has no subfolders): the report, its patterns, and
        # the figures of the first two positives with their planted sites
        out.parent.mkdir(parents=True, exist_ok=True)
        stem = out.with_suffix("").name
        shutil.copy(work / "report" / "report.md", out.parent / f"{stem}-report.md")
        shutil.copy(work / "report" / "patterns.json", out.parent / f"{stem}-patterns.json")
        for figure, name in zip(sorted((work / "figures").glob("*.png")), names[:2]):
            shutil.copy(figure, out.parent / f"{stem}-{name}.png")
        (out.parent / f"{stem}-sites.bed").write_text("".join(
            f"{n}\t{a}\t{b}\n" for n in names[:2] for a, b in sites[n]))
    rows = patterns["patterns"]
    best = [{"pattern": r["name"], "seqlets": r["seqlets"],
             "best": r["matches"][0]["motif_id"] if r["matches"] else None,
             "q_value": r["matches"][0]["q_value"] if r["matches"] else None} for r in rows]
    recovered = {m: any(b["best"] and b["best"].split(".")[0] == m.split(".")[0] for b in best) for m in args.motifs}
    result = {"benchmark": "explain_planted", "rule": args.rule, "motifs": args.motifs, "num": args.num,
              "seed": args.seed, "method": args.method, "train_overrides": args.train_override,
              "test_auroc": {k: summary.get(k) for k in summary if k.startswith(("test/", "baseline"))},
              "top_k_trained": trained, "top_k_untrained": untrained, "patterns": best,
              "each_planted_motif_is_a_best_match": recovered, "seconds": seconds,
              "machine_before": before, "machine_after": machine()}
    path = write_json(out, {**result, "command": script_command(__file__, argv)})
    print(json.dumps({k: result[k] for k in ("test_auroc", "top_k_trained", "top_k_untrained", "patterns",
                                             "each_planted_motif_is_a_best_match", "seconds")}, indent=1))
    return path


if __name__ == "__main__":
    main()
