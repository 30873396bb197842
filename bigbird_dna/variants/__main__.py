"""``python -m bigbird_dna.variants``: score the effect of variants with a trained model.

Examples::

    python -m bigbird_dna.variants --model EXPORT --fasta genome.fa --vcf calls.vcf.gz --out effects
    python -m bigbird_dna.variants --model EXPORT --fasta genome.fa --tsv variants.tsv --out effects

Input: a VCF (plain or gzip; multi-allelic sites split into one row per ALT; symbolic, ``*`` and
missing alleles skipped and counted) or a TSV of ``chrom pos ref alt`` (1-based ``pos`` as in VCF).

Windows: ``--window`` bp (default: the model's own window: a classifier's training sequences, an
MLM's pretraining window, else its context in tokens minus [CLS]/[SEP], counted as bases) centred
on the REF allele and moved inwards at a
contig end. The alt window is the same window with REF replaced by ALT; indels are scored, the far
end of the alt window taking more (deletion) or fewer (insertion) bases to keep the length.
Alleles longer than half the window are skipped and counted. Both strands are scored and averaged.

Output PREFIX.tsv: a '#' settings line, then one row per ALT allele: chrom, pos, id, ref, alt (as
given), ref_match (1 if REF equals the genome), then for a one-output classifier ref_score, alt_score and
delta (alt - ref); for a many-label classifier max_abs_delta, with every label in PREFIX.h5
(ref, alt, delta [N, labels], label_names, chrom, pos, id, ref_allele, alt_allele); for every model cos_dist
(1 - cosine of the mean-pooled ref and alt embeddings); for an MLM export llr, the masked-marginal
log-likelihood ratio of ALT over REF at the tokens covering the variant (see
bigbird_dna.variants.score). Files are written atomically.

REF alleles that disagree with the genome are scored (the ref window holds the genome's bases) and
counted; --strict makes the first one an error. Bad input (a contig not in the genome, a position
past its end) prints one error line naming the input line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.runtime.cli_args import add_device_arguments, parser_from_doc, run_inference_cli
from bigbird_dna.runtime.malloc import keep_freed_memory
from bigbird_dna.version import __version__

CHUNK = 256  # variants scored per call


def build_parser() -> argparse.ArgumentParser:
    parser = parser_from_doc("bigbird-dna-variants", __doc__)
    parser.add_argument("--model", required=True, help="export folder or save_pretrained folder")
    parser.add_argument("--fasta", required=True, help="the genome (FASTA, plain or gzip) the variants are on")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--vcf", help="variants as VCF (plain or gzip)")
    source.add_argument("--tsv", help="variants as a 'chrom pos ref alt' table, 1-based pos")
    parser.add_argument("--out", required=True, help="output prefix: PREFIX.tsv (and PREFIX.h5 for many labels)")
    parser.add_argument("--window", type=int, default=None, help="window in bp (default: see above)")
    parser.add_argument("--strict", action="store_true", help="a REF allele that disagrees with the genome is an error")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass (default 16)")
    add_device_arguments(parser)
    return parser


def default_window(model, requested: int | None) -> int:
    """``--window``, else the model's own (:func:`~bigbird_dna.inference.windows.model_window`)."""
    from bigbird_dna.inference.windows import model_window

    window = requested or model_window(model.export)
    if window < 2:
        raise InputError(f"--window must be at least 2 bp, got {window}.")
    return int(window)


@exit_on_input_error
def main(argv: list[str] | None = None) -> Path:
    keep_freed_memory()  # CPU inference: no page faults per batch (runtime/malloc.py), as in predict
    args = build_parser().parse_args(argv)
    if args.batch_size < 1:
        raise InputError(f"--batch-size must be a positive integer, got {args.batch_size}.")
    source, fmt = (args.vcf, "vcf") if args.vcf else (args.tsv, "tsv")
    for path in (source, args.fasta):
        if not Path(path).is_file():
            raise InputError(f"input not found: {path}.")
    from bigbird_dna.genome import open_genome
    from bigbird_dna.pretrained import BigBirdDNA
    from bigbird_dna.runtime.heartbeat import Heartbeat
    from bigbird_dna.variants.output import VariantWriter
    from bigbird_dna.variants.vcf import ReadCounts, read_variants
    from bigbird_dna.variants.windows import fits, variant_windows

    genome = open_genome(args.fasta)
    model = BigBirdDNA.from_pretrained(args.model, device=args.device, precision=args.precision,
                                       cuda_graphs=args.cuda_graphs)
    window = default_window(model, args.window)
    counts, mismatches, too_long = ReadCounts(), [], 0
    settings = {"model": Path(args.model).resolve(), "task": model.task, "window": window, "strands": "both",
                "input": Path(source).name, "version": __version__}
    with VariantWriter(args.out, model, settings) as writer, Heartbeat("scoring variants", unit="variant") as bar:
        chunk = []
        for variant in read_variants(source, fmt, counts):
            if not fits(variant, window):
                too_long += 1
                continue
            windows = variant_windows(genome, variant, window, source)
            if not windows.ref_matches:
                if args.strict:
                    raise InputError(f"{source} line {variant.line} ({variant.chrom}:{variant.pos}): REF "
                                     f"{variant.ref} disagrees with the genome's {windows.genome_ref} (--strict).")
                mismatches.append(variant.line)
            chunk.append(windows)
            if len(chunk) == CHUNK:
                writer.write(chunk, args.batch_size)
                bar.update(len(chunk))
                chunk = []
        if chunk:
            writer.write(chunk, args.batch_size)
            bar.update(len(chunk))
        written = writer.rows
        if not written and not counts.total_skipped and not too_long:
            raise InputError(f"{source} holds no variant (no data line after its header); nothing to score. "
                             "Check that it is the file you meant.")
    skipped = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.skipped.items()))
    print(f"wrote {writer.paths[0]}: {written} variants scored; skipped {counts.total_skipped} symbolic/missing "
          f"alleles{f' ({skipped})' if skipped else ''} and {too_long} longer than {window // 2} bp", file=sys.stderr)
    if not written:
        print(f"warning: no variant of {source} could be scored (all skipped or too long); {writer.paths[0]} "
              "holds the header only.", file=sys.stderr)
    if mismatches:
        print(f"{len(mismatches)} REF alleles disagree with the genome (first at line {mismatches[0]}); "
              "pass --strict to stop at them", file=sys.stderr)
    return writer.paths[0]


def cli() -> None:
    """Console-script entry point ``bigbird-dna-variants``."""
    run_inference_cli(main)


if __name__ == "__main__":
    cli()
