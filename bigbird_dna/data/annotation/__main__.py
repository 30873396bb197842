"""Build a labelled promoter task from an annotated genome (FASTA + GFF3/GTF, plain or gzip).

Example::

    python -m bigbird_dna.data.annotation genome.fa.gz genes.gff3.gz --task promoters --out promoters/

Positives are windows around every distinct TSS (-upstream..+downstream, read on the transcript's
strand); negatives are background windows far from any TSS, gene-body windows and optionally
dinucleotide-shuffled positives. Splits match MLM pretraining's (``data.holdout_fraction``): the
end of each record is held out for val then test, or whole records with --val-records/--test-records.
Writes train/val/test .tsv (sequence, label, record, start, end, strand, kind) and .bed, and
manifest.json, into a new folder.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bigbird_dna.data.annotation.build import build_promoter_task_from_files
from bigbird_dna.data.annotation.output import write_task
from bigbird_dna.data.annotation.promoters import NEGATIVE_KINDS, PromoterSettings
from bigbird_dna.errors import InputError, exit_on_input_error, plain_help
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.splits import SPLITS
from bigbird_dna.runtime.atomic import check_new_output_dir
from bigbird_dna.version import __version__


def parse_negatives(text: str) -> dict[str, float]:
    """``"background=1,gene_body=1,shuffled=0"`` as ``{kind: negatives per positive}``."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[kind.strip()] = float(value)
        except ValueError:
            raise InputError(f"--negatives item {item!r} is not KIND=NUMBER; write e.g. "
                             "--negatives background=1,gene_body=1,shuffled=0.") from None
    unknown = set(out) - set(NEGATIVE_KINDS)
    if unknown:
        raise InputError(f"--negatives names unknown kind(s) {sorted(unknown)}; choose among "
                         f"{', '.join(NEGATIVE_KINDS)}.")
    return {kind: out.get(kind, 0.0) for kind in NEGATIVE_KINDS}


def _records(text: str | None) -> tuple[str, ...]:
    return tuple(filter(None, (name.strip() for name in (text or "").split(","))))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bigbird_dna.data.annotation", description=plain_help(__doc__),
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("genome", type=Path, help="genome FASTA (plain, gzip or bgzip)")
    parser.add_argument("annotation", type=Path, help="GFF3 or GTF annotation of that genome (plain or gzip)")
    parser.add_argument("--task", choices=["promoters"], default="promoters",
                        help="task to build (default: %(default)s)")
    parser.add_argument("--out", type=Path, required=True, help="output folder; must not exist or be empty")
    parser.add_argument("--upstream", type=int, default=250, help="bases before the TSS (default: %(default)s)")
    parser.add_argument("--downstream", type=int, default=50,
                        help="bases from the TSS on, TSS included (default: %(default)s)")
    parser.add_argument("--negatives", default="background=1,gene_body=1,shuffled=0",
                        help="negatives per positive, by kind (default: %(default)s)")
    parser.add_argument("--min-tss-distance", type=int, default=2000,
                        help="background windows keep this far from any TSS, bp (default: %(default)s)")
    parser.add_argument("--gene-body-tss-distance", type=int, default=500,
                        help="gene-body windows keep this far from any TSS, bp (default: %(default)s)")
    parser.add_argument("--max-n-fraction", type=float, default=0.1,
                        help="windows with a larger share of N/ambiguous bases are skipped (default: %(default)s)")
    parser.add_argument("--holdout-fraction", type=float, default=0.1,
                        help="without record lists: each record's last 2f go to val then test (default: %(default)s)")
    parser.add_argument("--val-records", default="", help="comma-separated records held out for validation")
    parser.add_argument("--test-records", default="", help="comma-separated records held out for test")
    parser.add_argument("--seed", type=int, default=0, help="seed of every random choice (default: %(default)s)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="where a plain-gzip genome is decompressed once (default: $BIGBIRD_DNA_CACHE or "
                             "~/.cache/bigbird_dna)")
    return parser.parse_args(argv)


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    out = check_new_output_dir(args.out)
    settings = PromoterSettings(
        upstream_bp=args.upstream, downstream_bp=args.downstream, negatives=parse_negatives(args.negatives),
        min_tss_distance_bp=args.min_tss_distance, gene_body_tss_distance_bp=args.gene_body_tss_distance,
        max_n_fraction=args.max_n_fraction, holdout_fraction=args.holdout_fraction,
        val_records=_records(args.val_records), test_records=_records(args.test_records))
    began = time.monotonic()

    def progress(message: str) -> None:
        print(f"[{time.monotonic() - began:6.1f}s] {message}", file=sys.stderr, flush=True)

    task, manifest = build_promoter_task_from_files(open_genome(args.genome, args.cache_dir), args.annotation,
                                                    settings, args.seed, progress)
    progress(f"writing {out}")
    write_task(out, task, manifest)
    for split in SPLITS:
        counts = ", ".join(f"{kind} {n}" for kind, n in manifest["counts"][split].items() if n)
        print(f"{split}: {manifest['totals'][split]} windows ({counts})", file=sys.stderr)
    print(out)


if __name__ == "__main__":
    main()
