"""Genome-scale runs on CPU: a synthetic genome shaped like a real assembly, a short training and a
prediction over it, with each phase's time and each process's peak RSS.

Two modes::

    # one genome: 25 records (one about a quarter of the total), 5% N in long gaps, 40% soft-masked,
    # plain gzip; MLM training (few steps), a classifier fine-tuned from it, a prediction over it all
    python benchmarks/genome_scale.py run --size-mbp 50 [--small-contigs 2000]
    # prediction peak RSS on one 5-Mbp record against one 100-Mbp record (must be within 10%)
    python benchmarks/genome_scale.py rss --sizes-mbp 5 100

Results (default): ``genome_scale-<size>.json`` (``run``) and ``genome_scale-rss.json`` (``rss``) in
``benchmarks/results/<date>_<machine>/``. Phase times come from the training run's
``summary.json`` (``phases``) or its ``train.log`` phase lines when present (``null`` if neither);
CPU seconds and peak RSS of each child process come from ``os.wait4``. The prediction scores every
``--stride-factor``-th window position only (stride = factor x window): the reader still streams
and checks every base, so memory and I/O are those of a full scan while the model's share of the
time is 1/factor of it. The results file says so. Bases are uniform random (no Markov structure):
these runs measure the pipeline, not what a model learns.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, repo_command, script_command, write_json  # noqa: E402

WINDOW_BP = 500  # the classifier's prediction window (task=classify's default predict_window_bp)
LINE_BP = 60
BLOCK_LINES = 1 << 17  # bases generated at once: 7.9 Mbp, whatever the record's size


def record_sizes(total_bp: int, records: int, small_contigs: int, rng: np.random.Generator) -> list[int]:
    """Sizes of the records: one about a quarter of ``total_bp``, ``records - 1`` others of random
    shares of the rest, and ``small_contigs`` unplaced contigs of 1-50 kbp (taken from the rest)."""
    small = rng.integers(1_000, 50_000, size=small_contigs) if small_contigs else np.zeros(0, dtype=np.int64)
    if small.sum() > total_bp // 4:
        small = (small * (total_bp // 4) / small.sum()).astype(np.int64).clip(min=100)
    rest = total_bp - total_bp // 4 - int(small.sum())
    shares = rng.uniform(0.3, 1.0, size=records - 1)
    others = (shares / shares.sum() * rest).astype(np.int64)
    others[-1] += rest - int(others.sum())
    return [total_bp // 4, *others.tolist(), *small.tolist()]


def _intervals(length: int, share: float, low: int, high: int, rng: np.random.Generator) -> np.ndarray:
    """A boolean mask of ``length`` with random runs of ``low..high`` bases covering about ``share``."""
    mask = np.zeros(length, dtype=bool)
    if length < 2 * low:
        return mask
    expected = -np.log1p(-share) * length / ((low + high) / 2)  # runs overlap: cover `share` in expectation
    runs = int(expected) + int(rng.random() < expected % 1)  # the right share on average, even in short records
    starts = rng.integers(0, length, size=runs)
    ends = np.minimum(starts + rng.integers(low, high, size=runs), length)
    for start, end in zip(starts, ends):
        mask[start:end] = True
    return mask


def write_genome(path: Path, sizes: list[int], seed: int, n_share: float = 0.05,
                 masked_share: float = 0.40) -> dict:
    """A plain-gzip FASTA of uniform random bases with N gaps of 10-100 kbp (``n_share``) and
    soft-masked runs of 1-20 kbp (``masked_share``), written block by block; returns its counts."""
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"ACGT", dtype=np.uint8)
    counts = {"bases": 0, "n": 0, "lowercase": 0}
    with gzip.open(path, "wb", compresslevel=1) as out:  # level 1: generation stays cheap at 1 Gbp
        for k, size in enumerate(sizes):
            out.write(f">chr{k + 1} synthetic\n".encode() if k < 25 else f">unplaced{k - 24}\n".encode())
            for start in range(0, size, LINE_BP * BLOCK_LINES):
                length = min(LINE_BP * BLOCK_LINES, size - start)
                bases = alphabet[rng.integers(0, 4, size=length)]
                bases[_intervals(length, masked_share, 1_000, 20_000, rng)] |= 0x20  # ASCII lower case
                bases[_intervals(length, n_share, 10_000, 100_000, rng)] = ord("N")
                counts["n"] += int((bases == ord("N")).sum())
                counts["lowercase"] += int((bases >= ord("a")).sum())
                lines = -(-length // LINE_BP)  # blocks are whole lines but a record's last one
                grid = np.full((lines, LINE_BP + 1), ord("\n"), dtype=np.uint8)  # [lines, 60 bases + newline]
                grid[:, :LINE_BP] = np.resize(bases, lines * LINE_BP).reshape(lines, LINE_BP)
                text = grid.tobytes()
                if length % LINE_BP:  # a short last line: cut the repeated bases np.resize filled in
                    text = text[:(lines - 1) * (LINE_BP + 1) + length % LINE_BP] + b"\n"
                out.write(text)
            counts["bases"] += size
    return {"path": str(path), "records": len(sizes), "largest_bp": max(sizes), "bytes_gz": path.stat().st_size,
            "n_fraction": round(counts["n"] / counts["bases"], 4),
            "softmasked_fraction": round(counts["lowercase"] / counts["bases"], 4), **counts}


def write_classes(folder: Path, seed: int, per_class: int = 64) -> dict[str, Path]:
    """Two small classes of 500-bp sequences for a classifier to train on (``b`` = ``a`` reversed)."""
    rng = np.random.default_rng(seed + 1)
    folder.mkdir(parents=True, exist_ok=True)
    seqs = ["".join(rng.choice(list("ACGT"), size=WINDOW_BP)) for _ in range(per_class)]
    paths = {"a": folder / "a.fa", "b": folder / "b.fa"}
    paths["a"].write_text("".join(f">a{i}\n{s}\n" for i, s in enumerate(seqs)))
    paths["b"].write_text("".join(f">b{i}\n{s[::-1]}\n" for i, s in enumerate(seqs)))
    return paths


def measured(command: list[str], log: Path, env: dict | None = None) -> dict:
    """Run ``command`` (output to ``log``); its wall, user and system seconds and peak RSS."""
    started = time.monotonic()
    with open(log, "w") as out:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                 env={**os.environ, **(env or {})})
        _, status, usage = os.wait4(child.pid, 0)
    result = {"command": repo_command(command), "exit_status": os.waitstatus_to_exitcode(status),
              "wall_s": round(time.monotonic() - started, 1), "user_s": round(usage.ru_utime, 1),
              "sys_s": round(usage.ru_stime, 1), "peak_rss_mb": round(usage.ru_maxrss / 1024, 1), "log": str(log)}
    if result["exit_status"]:
        sys.exit(f"failed ({result['exit_status']}): {result['command']}\n{log.read_text()[-3000:]}")
    return result


def train_classifier(out: Path, backbone: Path | None, seed: int, cache: Path) -> tuple[dict, Path]:
    """A classify model (one epoch on :func:`write_classes`), fine-tuned from ``backbone`` if given."""
    classes = write_classes(out / "classes", seed)
    command = [sys.executable, "-m", "bigbird_dna.train", "task=classify", "data=classify",
               f"data.train={{a: {classes['a']}, b: {classes['b']}}}", "data.baselines.enabled=false",
               "task.schedule.max_epochs=1", f"hydra.run.dir={out / 'classify'}"]
    command += [f"task.backbone={backbone}"] if backbone else []
    return measured(command, out / "classify.log", {"BIGBIRD_DNA_CACHE": str(cache)}), out / "classify" / "export"


def predict(export: Path, fasta: Path, out: Path, stride_factor: int, name: str) -> dict:
    """``python -m bigbird_dna.predict`` over ``fasta`` on CPU, every ``stride_factor``-th window."""
    stride = stride_factor * WINDOW_BP
    result = measured([sys.executable, "-m", "bigbird_dna.predict", "--model", str(export), str(fasta),
                       "--out-prefix", str(out / name), "--device", "cpu", "--stride", str(stride), "--no-progress"],
                      out / f"{name}.log")
    rows = sum(1 for line in open(out / f"{name}.tsv") if not line.startswith(("#", "record\t")))
    return {**result, "window_bp": WINDOW_BP, "stride_bp": stride, "rows": rows}


def summary_timing(run_dir: Path, wall_s: float) -> dict:
    """The run's own ``seconds`` next to the measured wall time of its process (the issue's check:
    within 5%), and its ``phases`` (:func:`training_phases`)."""
    summary = run_dir / "summary.json"
    seconds = json.loads(summary.read_text()).get("seconds") if summary.is_file() else None
    return {"summary_seconds": seconds, "summary_seconds_over_wall": round(seconds / wall_s, 4) if seconds else None,
            "phases": training_phases(run_dir)}


def training_phases(run_dir: Path) -> dict | list | None:
    """``summary.json``'s ``phases`` if it has them, else the phase lines of ``train.log``, else None."""
    summary = run_dir / "summary.json"
    if summary.is_file() and "phases" in (data := json.loads(summary.read_text())):
        return data["phases"]
    log = run_dir / "train.log"
    lines = [line.strip() for line in log.read_text().splitlines() if "bigbird_dna.phases" in line] \
        if log.is_file() else []
    return lines or None


def machine() -> dict:
    return {"cpus": os.cpu_count(), "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
            "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                                     text=True).stdout.strip()}


def size_label(size_mbp: float) -> str:
    """``50mbp``, ``1000mbp``, ``2.5mbp``: the size in the names of the work folder and the results."""
    return f"{size_mbp:g}mbp"


def sampling_note(stride_factor: int) -> str:
    return (f"prediction stride = {stride_factor} x the {WINDOW_BP}-bp window: every base is read and checked, "
            f"1 window position in {stride_factor} is scored (both strands)")


def run(args: argparse.Namespace) -> dict:
    out = Path(args.work_dir) / f"genome_scale-{size_label(args.size_mbp)}"
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    started, before = time.monotonic(), machine()
    genome = write_genome(out / "genome.fa.gz", record_sizes(int(args.size_mbp * 1e6), 25, args.small_contigs, rng),
                          args.seed)
    genome["generate_s"] = round(time.monotonic() - started, 1)
    cache = out / "cache"
    train = measured([sys.executable, "-m", "bigbird_dna.train", f"data.fasta={genome['path']}",
                      f"trainer.max_steps={args.train_steps}", f"trainer.val_check_interval={args.train_steps}",
                      "data.eval_windows=64", f"hydra.run.dir={out / 'mlm'}"], out / "mlm.log",
                     {"BIGBIRD_DNA_CACHE": str(cache)})
    train.update(summary_timing(out / "mlm", train["wall_s"]))
    classify, export = train_classifier(out, out / "mlm" / "export", args.seed, cache)
    scan = predict(export, Path(genome["path"]), out, args.stride_factor, "scan")
    return {"benchmark": "genome_scale run", "genome": genome, "mlm_train": train, "classify_train": classify,
            "predict": scan, "note": sampling_note(args.stride_factor), "machine_before": before,
            "machine_after": machine()}


def rss(args: argparse.Namespace) -> dict:
    out = Path(args.work_dir) / "genome_scale-rss"
    out.mkdir(parents=True, exist_ok=True)
    before = machine()
    classify, export = train_classifier(out, None, args.seed, out / "cache")
    scans = {}
    for size in args.sizes_mbp:
        label = size_label(size)
        fasta = out / f"one_record_{label}.fa.gz"
        genome = write_genome(fasta, [int(size * 1e6)], args.seed)
        scans[label] = {"genome": genome, **predict(export, fasta, out, args.stride_factor, f"scan_{label}")}
    peaks = [scan["peak_rss_mb"] for scan in scans.values()]
    return {"benchmark": "genome_scale rss", "predict": scans, "classify_train": classify,
            "peak_rss_ratio_largest_to_smallest": round(peaks[-1] / peaks[0], 3), "must_show": "within 10%",
            "note": sampling_note(args.stride_factor), "machine_before": before, "machine_after": machine()}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    modes = parser.add_subparsers(dest="mode", required=True)
    for mode in ("run", "rss"):
        sub = modes.add_parser(mode)
        sub.add_argument("--stride-factor", type=int, default=20, help="score 1 window position in this many")
        sub.add_argument("--work-dir", default="outputs/benchmarks", help="where genomes and runs are written")
        sub.add_argument("--seed", type=int, default=0)
        add_out_argument(sub, f"genome_scale-{'<size>' if mode == 'run' else 'rss'}")
        if mode == "run":
            sub.add_argument("--size-mbp", type=float, required=True, help="total genome size in Mbp")
            sub.add_argument("--small-contigs", type=int, default=0, help="unplaced contigs of 1-50 kbp to add")
            sub.add_argument("--train-steps", type=int, default=20)
        else:
            sub.add_argument("--sizes-mbp", type=float, nargs="+", default=[5, 100])
    args = parser.parse_args(argv)
    result = {**(run(args) if args.mode == "run" else rss(args)), "command": script_command(__file__, argv)}
    label = size_label(args.size_mbp) if args.mode == "run" else "rss"
    path = write_json(args.out or default_out(f"genome_scale-{label}"), result)
    print(f"wrote {path}")
    return path


if __name__ == "__main__":
    main()
