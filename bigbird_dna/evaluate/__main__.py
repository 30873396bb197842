"""python -m bigbird_dna.evaluate DATA --out DIR [--folds K | --seeds S [S ...]] [key=value ...]:
evaluate the way papers report, the model and both baselines on the same folds.

Examples:

    python -m bigbird_dna.evaluate human_nontata_promoters --out eval_nontata
    python -m bigbird_dna.evaluate human_nontata_promoters --out eval_seeds --seeds 0 1 2
    python -m bigbird_dna.evaluate promoter_all --out eval_promoter_all --folds 10 model=base

DATA: a Genomic Benchmarks folder (ROOT/train/<class>/*, ROOT/test/<class>/*), a Nucleotide
Transformer benchmark folder (train.csv, test.csv: sequence,label[,name]), the annotation
builder's folder (train.tsv, val.tsv, test.tsv), one TSV/CSV, or one FASTA per class as
"{class_a: a.fa, class_b: b.fa}".

--folds K (default 5): stratified K-fold cross-validation of the pooled train (and val)
sequences, seeded by --seed; a dataset's own test split is set aside. --seeds S ...: the
dataset's own train/test split, trained once per seed. Each run trains the transformer with the
package defaults (python -m bigbird_dna.train: two classes task=promoter, more task=classify) and
the k-mer logistic regression and small CNN on the same sequences, validating on a stratified
share of the training part: max(10%, 50 sequences), at most a quarter of it (or the dataset's
val split, with --seeds). key=value arguments are Hydra overrides of every run (model=base
trainer.max_steps=2000 task.backbone=EXPORT ...).

--out DIR (new or empty) receives results.md and results.json (mean ± sd over the runs and the
paired comparison of the model with each baseline; published numbers when DATA is named after a
published benchmark dataset), folds.json (the sequence ids of every run's train, val and test),
config.yaml (the first run's composed config) and one folder per run (data/*.tsv, run/).

Bad input (a missing folder, an unreadable layout, classes too small for the folds, a non-empty
--out, bad --folds or --seeds): one error line, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from omegaconf import OmegaConf

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.evaluate.inputs import LabelledPool, read_dataset
from bigbird_dna.evaluate.plan import folds_manifest, plan_splits
from bigbird_dna.evaluate.report import build_report, markdown, to_json
from bigbird_dna.evaluate.runs import METRICS, MODELS, TASKS, compose_split_config, run_split
from bigbird_dna.runtime.atomic import check_new_output_dir, write_text_atomic
from bigbird_dna.runtime.cli_args import parser_from_doc

PROG = "python -m bigbird_dna.evaluate"


def split_overrides_from_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(options, overrides)``: Hydra overrides are the arguments with ``=`` (or a leading ``+``
    or ``~``) that are not options."""
    overrides = [a for a in argv if not a.startswith("-") and ("=" in a or a.startswith(("+", "~")))
                 and not a.lstrip().startswith("{")]
    return [a for a in argv if a not in overrides], overrides


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The options and the Hydra overrides; bad options are an :class:`InputError`."""
    parser = parser_from_doc(PROG, __doc__)

    def refuse(message: str) -> None:
        raise InputError(f"{message} (see {PROG} --help)")

    parser.error = refuse  # one error line and exit status 2, like every other bad input
    parser.add_argument("data", help="the dataset (see below)")
    parser.add_argument("--out", type=Path, required=True, help="output folder; must not exist or be empty")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--folds", type=int, default=None, help="K-fold cross-validation (default 5)")
    mode.add_argument("--seeds", type=int, nargs="+", default=None, help="seeds on the dataset's own split")
    parser.add_argument("--seed", type=int, default=0, help="seed of the folds and validation shares (default 0)")
    parser.add_argument("--name", default=None, help="the dataset's name (default: DATA's folder or file name)")
    parser.add_argument("--sequence-column", default="sequence", help="tables: sequence column (default sequence)")
    parser.add_argument("--label-column", default="label", help="tables: label column (default label)")
    options, overrides = split_overrides_from_options(argv)
    args = parser.parse_args(options)
    if args.folds is not None and args.folds < 2:
        raise InputError(f"--folds {args.folds}: cross-validation needs at least 2 folds.")
    if args.seeds is not None and (min(args.seeds) < 0 or len(set(args.seeds)) != len(args.seeds)):
        raise InputError(f"--seeds {' '.join(map(str, args.seeds))}: give distinct seeds of 0 or more.")
    if args.seed < 0:
        raise InputError(f"--seed {args.seed} must be 0 or more.")
    return args, overrides


@contextmanager
def phase_lines() -> Iterator[None]:
    """Show each run's phases (fit, validate, test, baselines, with their seconds) on stdout."""
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("    %(message)s"))
    phases = logging.getLogger("bigbird_dna.phases")
    level = phases.level
    phases.addHandler(handler)
    phases.setLevel(logging.INFO)
    try:
        yield
    finally:
        phases.removeHandler(handler)
        phases.setLevel(level)


@exit_on_input_error
def main(argv: list[str] | None = None) -> dict:
    """Run the evaluation; returns the report (also written to ``--out``)."""
    args, overrides = parse_args(sys.argv[1:] if argv is None else argv)
    out = check_new_output_dir(args.out)
    pool = read_dataset(args.data, args.name, args.sequence_column, args.label_column)
    plan = plan_splits(pool, args.folds, args.seeds, args.seed)
    return run_plan(pool, plan, out, overrides)


def run_plan(pool: LabelledPool, plan: dict, out: Path, overrides: list[str]) -> dict:
    """Train every split of ``plan`` (:func:`~bigbird_dna.evaluate.plan.plan_splits`) into ``out``,
    then write and print the report."""
    splits = plan["splits"]
    first = out / splits[0].name
    tables = {part: first / "data" / f"{part}.tsv" for part in ("train", "val", "test")}
    cfg = compose_split_config(pool.label_kind, tables, splits[0].seed, first / "run", overrides)  # bad ones stop here
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "config.yaml", "# the first run's config; every run's own is <run>/run/config.yaml\n"
                      + OmegaConf.to_yaml(cfg, resolve=True))
    write_text_atomic(out / "folds.json", json.dumps(folds_manifest(pool, plan), indent=2) + "\n")
    print(f"evaluate {pool.name}: {plan['description']}; {' '.join(TASKS[pool.label_kind])}; writing {out}",
          flush=True)
    started, results = time.monotonic(), []
    with phase_lines():
        for number, split in enumerate(splits, 1):
            sizes = " / ".join(str(len(getattr(split, p))) for p in ("train", "val", "test"))
            print(f"[{number}/{len(splits)}] {split.name} (seed {split.seed}): train / val / test {sizes} sequences; "
                  "training the model, then the k-mer LR and the small CNN", flush=True)
            result = run_split(pool, split, out / split.name, overrides)
            results.append(result)
            auroc = METRICS[pool.label_kind][0]
            scores = ", ".join(f"{name} {result['metrics'][key][auroc[0]]:.4f}" for key, name in MODELS)
            print(f"[{number}/{len(splits)}] {split.name} done in {result['seconds']:.1f} s; test {auroc[1]}: {scores}",
                  flush=True)
            left = len(splits) - number
            if left:
                eta = (time.monotonic() - started) / number * left
                print(f"expected: about {eta:.0f} s more for {left} more run(s), done around "
                      f"{time.strftime('%H:%M:%S', time.localtime(time.time() + eta))}", flush=True)
    report = build_report(pool, plan, results, overrides, time.monotonic() - started)
    text = markdown(report)
    write_text_atomic(out / "results.json", to_json(report))
    write_text_atomic(out / "results.md", text)
    print(text, flush=True)
    return report


def cli() -> None:
    """``bigbird-dna-evaluate``."""
    main()


if __name__ == "__main__":
    cli()
