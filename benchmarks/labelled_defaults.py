"""Do the labelled defaults win? Model against the k-mer LR and the small CNN, several seeds, per task.

    python benchmarks/labelled_defaults.py --task promoters=DIR --task donors=DIR [--seeds 0 1 2]
        [--train-rows 6000 --val-rows 1000 --test-rows 2000] [--override model=tiny ...] [--tag NAME]

Each ``DIR`` is a task folder with ``train.tsv``, ``val.tsv`` and ``test.tsv`` (a ``sequence`` and a
0/1 ``label`` column): what ``python -m bigbird_dna.data.annotation`` (promoters, splice donors and
acceptors) and ``python -m bigbird_dna.motifs plant`` write. Each split is subsampled once (seed 0,
the same rows for every model seed) to the given sizes, so that every seed and both baselines see
the same sequences; with ``--resample-train`` each seed draws its own train rows instead (small-set
runs: ``--train-rows 100 --val-rows 0 --seeds 0 1 2 3 4``, where ``--val-rows 0`` leaves the val
split out and each run holds out ``data.val_fraction`` of its train rows, as a user's would).
Then, per seed, ``python -m bigbird_dna.train task=promoter data=promoter_labelled`` with nothing
else but the data paths and ``seed=`` (plus ``--override``), exactly as a user runs it; the run's
own summary gives the model's test AUROC, both baselines' (the baselines are retrained for every
seed, on the same rows) and the seconds of the whole run.

Results: ``labelled_defaults[-TAG].json`` and ``.md`` in ``benchmarks/results/<date>_<machine>/``:
per task, the folder's fingerprint (each split's SHA-256 and the builder's settings, so that a run
on a rebuilt folder can be told from one on the same rows), per seed and the mean, with "wins" true
only if on every seed the model beats every baseline present: the k-mer LR, the summary's CNN and,
with ``--given-strand-cnn``, the small CNN on the given strand. ``--plain-cnn`` adds a
one-convolution, global-max CNN: a control of the spacing task (it sees which motifs occur, not
their order), not a baseline to beat.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402


def subsample(src: Path, dst: Path, rows: int | None, seed: int = 0) -> int:
    """Copy a TSV keeping ``rows`` random data rows (all if None); the rows kept."""
    with open(src, newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        header, body = next(reader), list(reader)
    if rows is not None and rows < len(body):
        body = random.Random(seed).sample(body, rows)
    with open(dst, "w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        writer.writerows(body)
    return len(body)


def fingerprint(folder: Path) -> dict:
    """What identifies a task folder, so a later run can tell whether it has the same rows: the
    SHA-256 of each split file (first 16 hex digits) and, where the builder wrote one, the
    manifest's ``settings`` (window, negatives, seed)."""
    splits = {split: hashlib.sha256((folder / f"{split}.tsv").read_bytes()).hexdigest()[:16]
              for split in ("train", "val", "test") if (folder / f"{split}.tsv").is_file()}
    manifest = folder / "manifest.json"
    settings = json.loads(manifest.read_text()).get("settings") if manifest.is_file() else None
    return {"sha256": splits, "settings": settings}


def train(work: Path, task: Path, seed: int, overrides: list[str]) -> dict:
    """One ``bigbird_dna.train`` run on a task folder; the numbers of its summary."""
    run_dir = work / f"run-{task.name}-seed{seed}"
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "bigbird_dna.train", "task=promoter", "data=promoter_labelled",
         f"data.train={task}/train.tsv", f"data.test={task}/test.tsv",
         *([f"data.val={task}/val.tsv"] if (task / "val.tsv").exists() else []),
         f"seed={seed}", f"hydra.run.dir={run_dir}", *overrides],
        cwd=work, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if result.returncode != 0:
        raise SystemExit(f"train failed on {task.name} seed {seed}:\n{result.stderr[-3000:]}")
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"seed": seed, "model": round(summary["test/auroc"], 4),
            "kmer_lr": round(summary["baseline/kmer_lr/test_auroc"], 4),
            "cnn": round(summary["baseline/cnn/test_auroc"], 4),
            "val_auroc": round(summary["val/auroc"], 4), "steps": summary["global_step"],
            "fit_seconds": summary.get("phases", {}).get("fit"), "run_seconds": summary["seconds"],
            "baseline_seconds": summary["baseline/seconds"],
            "wall_seconds": round(time.perf_counter() - started, 1)}


def extra_cnn(task: Path, seed: int, widths: tuple[int, ...], both_strands: bool) -> float:
    """Test AUROC of a :class:`~bigbird_dna.evaluation.baselines.cnn.SmallCNN` of ``widths`` trained on the
    task folder's train split and early-stopped on val, as the summary's CNN is. ``(21,)`` is the plain
    control: one convolution and a global max pool, which sees which motifs occur but not their order
    or spacing; ``both_strands=False`` keeps every sequence on its given strand (oriented tasks)."""
    import numpy as np
    import torch

    from bigbird_dna.evaluation.baselines.cnn import predict_cnn, train_cnn
    from bigbird_dna.evaluation.baselines.sequences import CodedSet, encode_strings
    from bigbird_dna.evaluation.metrics import classification_metrics

    def coded(split: str) -> CodedSet:
        with open(task / f"{split}.tsv", newline="") as handle:
            rows = list(csv.DictReader(handle, delimiter="\t"))
        codes, lengths = encode_strings([r["sequence"] for r in rows])
        return CodedSet(codes, lengths, np.array([[float(r["label"])] for r in rows], dtype=np.float32))

    train_set, val_set, test_set = coded("train"), coded("val"), coded("test")
    result = train_cnn(train_set, val_set, "binary", "cpu", seed, widths=widths, both_strands=both_strands)
    probs = predict_cnn(result.model, test_set, "binary", torch.device("cpu"), both_strands)
    return round(float(classification_metrics(probs, torch.from_numpy(test_set.labels), "binary")["auroc"]), 4)


EXTRA = {"plain_cnn": ((21,), True), "cnn_given_strand": ((15, 7, 5), False)}


def verdict(runs: list[dict]) -> dict:
    """Means over seeds and whether the model wins: mean above both, no seed below either."""
    keys = ("model", "kmer_lr", "cnn") + tuple(k for k in EXTRA if k in runs[0])
    mean = {k: round(statistics.mean(r[k] for r in runs), 4) for k in keys}
    sd = round(statistics.stdev(r["model"] for r in runs), 4) if len(runs) > 1 else None
    # the plain CNN is a control of the spacing task, not a baseline; every other one must lose on every seed
    rivals = [k for k in keys if k not in ("model", "plain_cnn")]
    wins = all(r["model"] > r[k] for r in runs for k in rivals)
    return {"mean": mean, "model_sd": sd, "wins": wins, "mean_not_below_kmer_lr": mean["model"] >= mean["kmer_lr"],
            "mean_run_seconds": round(statistics.mean(r["run_seconds"] for r in runs), 1)}


def table(results: dict) -> str:
    lines = ["| task | train / val / test | model (mean ± sd) | k-mer LR | small CNN | small CNN, given strand "
             "| plain CNN (1 conv, global max) | model − best CNN | per seed (model / LR / CNN) | wins "
             "| run s (of which baselines) |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, task in results.items():
        v, runs = task["verdict"], task["runs"]
        seeds = "; ".join(f"{r['model']:.3f} / {r['kmer_lr']:.3f} / {r['cnn']:.3f}" for r in runs)
        base = statistics.mean(r["baseline_seconds"] for r in runs)
        sd = f" ± {v['model_sd']:.3f}" if v["model_sd"] is not None else ""
        plain = f"{v['mean']['plain_cnn']:.3f}" if "plain_cnn" in v["mean"] else "–"
        given = f"{v['mean']['cnn_given_strand']:.3f}" if "cnn_given_strand" in v["mean"] else "–"
        best_cnn = max(v["mean"]["cnn"], v["mean"].get("cnn_given_strand", 0.0))
        below = "" if v.get("mean_not_below_kmer_lr", True) else " (mean below the k-mer LR)"
        rows = " / ".join(str(task["rows"].get(split, "–")) for split in ("train", "val", "test"))
        lines.append(f"| {name} | {rows} | {v['mean']['model']:.3f}{sd} "
                     f"| {v['mean']['kmer_lr']:.3f} | {v['mean']['cnn']:.3f} | {given} | {plain} "
                     f"| {v['mean']['model'] - best_cnn:+.3f} | {seeds} "
                     f"| {'yes' if v['wins'] else 'NO'}{below} "
                     f"| {v['mean_run_seconds']:.0f} ({base:.0f}) |")
    return "\n".join(lines) + "\n"


def add_controls(args: argparse.Namespace) -> Path:
    """``--add-controls``: the control CNNs of ``--task`` NAMEs, added to an existing results file."""
    data = json.loads(args.add_controls.read_text())
    folders = dict(spec.split("=", 1) for spec in args.task)
    with tempfile.TemporaryDirectory() as tmp:
        for name, entry in data["tasks"].items():
            wanted = [key for key, names in (("plain_cnn", args.plain_cnn), ("cnn_given_strand", args.given_strand_cnn))
                      if name in names]
            if not wanted:
                continue
            task = Path(tmp) / name
            task.mkdir()
            for split, count in entry["rows"].items():
                subsample(Path(folders[name]) / f"{split}.tsv", task / f"{split}.tsv", count)
            for run in entry["runs"]:
                for key in wanted:
                    run[key] = extra_cnn(task, run["seed"], *EXTRA[key])
                print(name, json.dumps(run), flush=True)
            entry["verdict"] = verdict(entry["runs"])
    data.setdefault("controls_added_by", []).append(script_command(__file__, None))
    args.add_controls.with_suffix(".md").write_text(table(data["tasks"]))
    return write_json(args.add_controls, data)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", action="append", required=True, help="NAME=DIR, repeatable")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--train-rows", type=int, default=6000)
    parser.add_argument("--val-rows", type=int, default=1000, help="0: no val file; each run holds out "
                        "data.val_fraction of its train rows")
    parser.add_argument("--test-rows", type=int, default=2000)
    parser.add_argument("--resample-train", action="store_true",
                        help="draw each seed's own --train-rows subsample of train (seeded by the seed)")
    parser.add_argument("--override", action="append", default=[], help="a train override, repeatable")
    parser.add_argument("--plain-cnn", action="append", default=[], metavar="NAME",
                        help="also train a one-layer CNN with global max pooling on task NAME (repeatable)")
    parser.add_argument("--given-strand-cnn", action="append", default=[], metavar="NAME",
                        help="also train the small CNN on the given strand only (oriented task NAME; repeatable)")
    parser.add_argument("--tag", default="", help="suffix of the results files")
    parser.add_argument("--add-controls", type=Path, metavar="JSON",
                        help="add --plain-cnn/--given-strand-cnn columns to this results file's runs (the same "
                             "rows: the subsample is seeded) without training the model again, and rewrite it")
    add_out_argument(parser, "labelled_defaults")
    args = parser.parse_args(argv)
    if args.add_controls:
        return add_controls(args)
    out = args.out or default_out("labelled_defaults" + (f"-{args.tag}" if args.tag else ""))
    before, results = machine(), {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for spec in args.task:
            name, folder = spec.split("=", 1)
            task = work / name
            task.mkdir()
            rows = {split: subsample(Path(folder) / f"{split}.tsv", task / f"{split}.tsv", limit)
                    for split, limit in (("train", args.train_rows), ("val", args.val_rows),
                                         ("test", args.test_rows)) if limit != 0}
            runs = []
            for seed in args.seeds:
                if args.resample_train:
                    subsample(Path(folder) / "train.tsv", task / "train.tsv", args.train_rows, seed)
                runs.append(train(work, task, seed, args.override))
                for key, wanted in (("plain_cnn", args.plain_cnn), ("cnn_given_strand", args.given_strand_cnn)):
                    if name in wanted:
                        runs[-1][key] = extra_cnn(task, seed, *EXTRA[key])
                print(name, json.dumps(runs[-1]), flush=True)
                results[name] = {"source": str(folder), "rows": rows, "folder": fingerprint(Path(folder)), "runs": runs,
                                 "verdict": verdict(runs)}
                save(out, results, args, before, argv, complete=False)  # a stopped benchmark keeps its runs
    markdown = save(out, results, args, before, argv, complete=True)
    print(markdown)
    return out


def save(out: Path, results: dict, args: argparse.Namespace, before: dict, argv: list[str] | None,
         complete: bool) -> str:
    """Write ``out``'s JSON and Markdown with the runs so far (``complete``: every task and seed ran);
    returns the Markdown table."""
    markdown = table(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(markdown if complete else "Incomplete: the runs so far.\n\n" + markdown)
    write_json(out, {"benchmark": "labelled_defaults", "overrides": args.override, "seeds": args.seeds,
                     "complete": complete, "tasks": results, "machine_before": before, "machine_after": machine(),
                     "command": script_command(__file__, argv)})
    return markdown


if __name__ == "__main__":
    main()
