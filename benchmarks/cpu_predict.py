"""CPU prediction speed of the default tiny classifier, and what the allocator setting buys.

    python benchmarks/cpu_predict.py [--fasta sample_data/h_pylori_F32.fa]

Trains the default tiny classifier from scratch (:func:`genome_scale.train_classifier`; its weights
do not matter for speed), then scans the FASTA with ``python -m bigbird_dna.predict`` on CPU, both
strands, stride = window, three ways in one run:

- ``default``: the command as users run it (fp32; glibc keeps freed memory, ``runtime/malloc.py``);
- ``glibc_returns_memory``: the same with the one ``keep_freed_memory()`` call disabled, i.e. glibc's
  own mmap/trim thresholds, as before that call existed;
- ``bf16``: ``--precision bf16`` (CPUs with native bf16; scores move by about 1e-3).

For each: wall, user and system seconds of the process, Mbp scanned per minute of wall time (the
whole command: start-up, model load, reading, tokenising and scoring), and system time as a share
of CPU time. Results: ``cpu_predict.json`` in ``benchmarks/results/<date>_<machine>/``. Run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import WINDOW_BP, machine, measured, train_classifier  # noqa: E402
from bigbird_dna.genome.fasta_stream import iter_fasta  # noqa: E402

# predict's entry point with keep_freed_memory() turned into a no-op: the allocator as glibc sets it
WITHOUT_KEEP = ("import sys, bigbird_dna.predict.cli as cli; cli.keep_freed_memory = lambda: False; "
                "sys.argv[0] = 'bigbird-dna-predict'; cli.main()")
VARIANTS = {"default": (["-m", "bigbird_dna.predict"], []),
            "glibc_returns_memory": (["-c", WITHOUT_KEEP], []),
            "bf16": (["-m", "bigbird_dna.predict"], ["--precision", "bf16"])}


def scan(entry: list[str], extra: list[str], export: Path, fasta: Path, out: Path, name: str, bases: int) -> dict:
    """One timed predict over ``fasta`` (CPU, stride = window); its speed and system-time share."""
    command = [sys.executable, *entry, "--model", str(export), str(fasta), "--out-prefix", str(out / name),
               "--device", "cpu", "--stride", str(WINDOW_BP), "--no-progress", *extra]
    result = measured(command, out / f"{name}.log")
    cpu = result["user_s"] + result["sys_s"]
    return {**result, "mbp_per_min": round(bases / 1e6 / result["wall_s"] * 60, 3),
            "sys_share_of_cpu": round(result["sys_s"] / cpu, 4)}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fasta", default=str(Path(__file__).resolve().parents[1] / "sample_data" / "h_pylori_F32.fa"))
    parser.add_argument("--work-dir", default="outputs/benchmarks/cpu_predict")
    add_out_argument(parser, "cpu_predict")
    args = parser.parse_args(argv)
    out, fasta = Path(args.work_dir), Path(args.fasta)
    out.mkdir(parents=True, exist_ok=True)
    bases = sum(len(seq) for _, seq in iter_fasta(fasta))
    before = machine()
    train, export = train_classifier(out, None, 0, out / "cache")
    runs = {name: scan(entry, extra, export, fasta, out, name, bases) for name, (entry, extra) in VARIANTS.items()}
    result = {"benchmark": "cpu_predict", "fasta": fasta.name, "bases": bases, "window_bp": WINDOW_BP,
              "stride_bp": WINDOW_BP, "strands": "both", "classify_train": train, "runs": runs,
              "speedup_default_over_glibc_returns_memory":
                  round(runs["default"]["mbp_per_min"] / runs["glibc_returns_memory"]["mbp_per_min"], 3),
              "target": "at least 2 Mbp/min with the default tiny classifier on 2 cores, system time under 10% of CPU",
              "machine_before": before, "machine_after": machine()}
    path = write_json(args.out or default_out("cpu_predict"), {**result, "command": script_command(__file__, argv)})
    print(json.dumps({name: {k: run[k] for k in ("wall_s", "mbp_per_min", "sys_share_of_cpu")}
                      for name, run in runs.items()}, indent=1))
    return path


if __name__ == "__main__":
    main()
