"""Build a labelled task from an annotated genome (FASTA + GFF3/GTF, plain or gzip): promoters, or
splice donors or acceptors.

Example::

    python -m bigbird_dna.data.annotation genome.fa.gz genes.gff3.gz --task promoters --out promoters/
    python -m bigbird_dna.data.annotation genome.fa.gz genes.gff3.gz --task splice_donors --out donors/

promoters: positives are windows around every distinct TSS (-upstream..+downstream, read on the
transcript's strand); negatives are background windows far from any TSS, gene-body windows and
optionally dinucleotide-shuffled positives.

splice_donors, splice_acceptors: positives are windows around every distinct donor (exon | intron)
or acceptor (intron | exon) boundary of the transcripts' introns, upstream bases 5' of it and
downstream bases 3' of it on the transcript's strand; negatives are GT (AG) decoys inside genes at
the same offset, away from annotated sites, and optionally background windows.

Splits match MLM pretraining's (``data.holdout_fraction``): the end of each record is held out for
val then test, or whole records with --val-records/--test-records. Writes train/val/test .tsv
(sequence, label, record, start, end, strand, kind) and .bed, and manifest.json, into a new folder.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from bigbird_dna.data.annotation.build import TASKS, annotation_task, build_task_from_files, task_settings
from bigbird_dna.data.annotation.output import write_task
from bigbird_dna.data.annotation.promoters import PromoterSettings
from bigbird_dna.data.annotation.splice import SpliceSettings
from bigbird_dna.errors import InputError, exit_on_input_error, plain_help
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.splits import SPLITS
from bigbird_dna.runtime.atomic import check_new_output_dir
from bigbird_dna.version import __version__

P, S = PromoterSettings, SpliceSettings
# option (as argparse names it) -> the settings field it sets; options left unset take the task's default
OPTIONS = {"upstream": "upstream_bp", "downstream": "downstream_bp", "negatives": "negatives",
           "min_tss_distance": "min_tss_distance_bp", "gene_body_tss_distance": "gene_body_tss_distance_bp",
           "min_site_distance": "min_site_distance_bp", "drop_noncanonical": "keep_noncanonical",
           "max_n_fraction": "max_n_fraction", "holdout_fraction": "holdout_fraction",
           "val_records": "val_records", "test_records": "test_records"}


def parse_negatives(text: str, kinds: tuple[str, ...]) -> dict[str, float]:
    """``"background=1,gene_body=1"`` as ``{kind: negatives per positive}`` over ``kinds`` (0 when unnamed)."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[kind.strip()] = float(value)
        except ValueError:
            raise InputError(f"--negatives item {item!r} is not KIND=NUMBER; write e.g. "
                             f"--negatives {kinds[0]}=1.") from None
    unknown = set(out) - set(kinds)
    if unknown:
        raise InputError(f"--negatives names unknown kind(s) {sorted(unknown)}; choose among {', '.join(kinds)}.")
    return {kind: out.get(kind, 0.0) for kind in kinds}


def _records(text: str) -> tuple[str, ...]:
    return tuple(filter(None, (name.strip() for name in text.split(","))))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bigbird_dna.data.annotation", description=plain_help(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("genome", type=Path, help="genome FASTA (plain, gzip or bgzip)")
    parser.add_argument("annotation", type=Path, help="GFF3 or GTF annotation of that genome (plain or gzip)")
    parser.add_argument("--task", default="promoters", help=f"{', '.join(TASKS)} (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="output folder; must not exist or be empty")
    parser.add_argument("--upstream", type=int, help="bases 5' of the site: before the TSS, or the splice "
                        f"boundary (default: promoters {P.upstream_bp}, splice {S.upstream_bp})")
    parser.add_argument("--downstream", type=int, help="bases 3' of it, TSS included (default: promoters "
                        f"{P.downstream_bp}, splice {S.downstream_bp})")
    parser.add_argument("--negatives", help="negatives per positive, by kind (default: promoters background=1,"
                        "gene_body=1,shuffled=0; splice decoy=1,background=0)")
    parser.add_argument("--min-tss-distance", type=int, help="promoters: background windows keep this far from "
                        f"any TSS, bp (default: {P.min_tss_distance_bp})")
    parser.add_argument("--gene-body-tss-distance", type=int, help="promoters: gene-body windows keep this far "
                        f"from any TSS, bp (default: {P.gene_body_tss_distance_bp})")
    parser.add_argument("--min-site-distance", type=int, help="splice: decoys keep this far from any annotated "
                        f"site of the kind, bp (default: {S.min_site_distance_bp})")
    parser.add_argument("--drop-noncanonical", action="store_true", default=None,
                        help="splice: drop positives without GT (donors) / AG (acceptors) (default: keep, counted)")
    parser.add_argument("--max-n-fraction", type=float, help="windows with a larger share of N/ambiguous bases "
                        f"are skipped (default: {P.max_n_fraction})")
    parser.add_argument("--holdout-fraction", type=float, help="without record lists: each record's last 2f go "
                        f"to val then test (default: {P.holdout_fraction})")
    parser.add_argument("--val-records", type=_records, help="comma-separated records held out for validation")
    parser.add_argument("--test-records", type=_records, help="comma-separated records held out for test")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default: %(default)s)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where a plain-gzip genome is decompressed once (default: $BIGBIRD_DNA_CACHE or "
                             "~/.cache/bigbird_dna)")
    return parser.parse_args(argv)


def settings_values(args: argparse.Namespace) -> dict[str, Any]:
    """The settings fields the command line sets for ``args.task``.

    Raises:
        InputError: an unknown task, or an option of another task.
    """
    task = annotation_task(args.task)
    given = {option: getattr(args, option) for option in OPTIONS if getattr(args, option) is not None}
    foreign = [option for option in given if OPTIONS[option] not in task.setting_names()]
    if foreign:
        names = ", ".join("--" + option.replace("_", "-") for option in foreign)
        raise InputError(f"{names} do(es) not apply to --task {args.task}; see --help for each option's task.")
    values = {OPTIONS[option]: value for option, value in given.items()}
    if "keep_noncanonical" in values:
        values["keep_noncanonical"] = not values["keep_noncanonical"]
    if "negatives" in values:
        values["negatives"] = parse_negatives(values["negatives"], task.settings_class.NEGATIVE_KINDS)
    return values


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = task_settings(args.task, settings_values(args))
    settings.check()
    out = check_new_output_dir(args.out)
    began = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    task, manifest = build_task_from_files(open_genome(args.genome, args.cache_dir), args.annotation, args.task,
                                           settings, args.seed, progress)
    progress(f"writing {out}")
    write_task(out, task, manifest)
    for split in SPLITS:
        counts = ", ".join(f"{kind} {n}" for kind, n in manifest["counts"][split].items() if n)
        print(f"{split}: {manifest['totals'][split]} windows ({counts})", file=sys.stderr)
    if "dinucleotides" in manifest:
        d = manifest["dinucleotides"]
        print(f"positives with {d['canonical']}: {d['canonical_share']:.2%} ({d['counts']})", file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
