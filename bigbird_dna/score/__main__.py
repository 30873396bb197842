"""``python -m bigbird_dna.score``: a per-base track of masked-marginal log-likelihoods over regions.

Examples::

    python -m bigbird_dna.score genome.fa EXPORT --region chr1:10,001-20,000 --out chr1.bedGraph
    python -m bigbird_dna.score genome.fa EXPORT --bed regions.bed --out scores.bw --strands both

Each base gets ``log p`` (natural log) of its own token with that token masked, as
:meth:`BigBirdDNA.score` computes it (a k-mer/BPE token's log p is shared equally by its bases);
bases in tokens with N or IUPAC codes get no value. Needs an MLM export (a pretraining run's export/).

Regions: --region chr:start-end is 1-based and inclusive, as samtools (chr alone = the whole
contig); --bed is 0-based and half-open. Overlapping regions are merged. Windows of --window bases
(default: the model's context, one token per base) tile each region at half a window's stride, and
each base is scored in the window where it is most central: at least a quarter window of context
on each side, except near a contig end.

Output (the suffix picks the format, written atomically): .bedGraph (or .bg) with a track line,
then chrom, start, end (0-based, half-open), value; or .bw / .bigWig via pyBigWig (pip install
'bigbird_dna[tracks]'). Cost: one forward pass per token, so a window of W tokens costs W passes.
Bad input (a contig not in the genome, an interval past its end, a classifier export) prints one
error line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.runtime.cli_args import add_device_arguments, parser_from_doc, run_inference_cli
from bigbird_dna.runtime.malloc import keep_freed_memory
from bigbird_dna.version import __version__


def build_parser() -> argparse.ArgumentParser:
    parser = parser_from_doc("bigbird-dna-score", __doc__)
    parser.add_argument("genome", help="FASTA (plain or gzip)")
    parser.add_argument("model", help="an MLM export folder or save_pretrained folder")
    parser.add_argument("--region", action="append", default=[],
                        help="chr:start-end, 1-based inclusive (samtools), or chr; repeat for more")
    parser.add_argument("--bed", help="regions as BED (0-based, half-open)")
    parser.add_argument("--out", required=True, help="scores.bedGraph or scores.bw")
    parser.add_argument("--window", type=int, default=None, help="window in bp (default: the model's context)")
    parser.add_argument("--strands", default="+", choices=("+", "both"),
                        help="+ (default) or both (mean with the reverse complement's scores)")
    parser.add_argument("--batch-size", type=int, default=64, help="masked copies per forward pass (default 64)")
    add_device_arguments(parser)
    return parser


def _check_args(args: argparse.Namespace) -> str:
    """The output format; refuses missing inputs and sizes before anything is loaded."""
    from bigbird_dna.inference.tracks import track_format

    fmt = track_format(args.out)
    if not args.region and not args.bed:
        raise InputError("no regions: give --region chr:start-end (1-based, inclusive) or --bed regions.bed.")
    for path in (args.genome, args.bed):
        if path and not Path(path).is_file():
            raise InputError(f"input not found: {path}.")
    if args.batch_size < 1:
        raise InputError(f"--batch-size must be a positive integer, got {args.batch_size}.")
    return fmt


@exit_on_input_error
def main(argv: list[str] | None = None) -> Path:
    keep_freed_memory()  # CPU inference: no page faults per batch (runtime/malloc.py), as in predict
    args = build_parser().parse_args(argv)
    fmt = _check_args(args)
    from bigbird_dna.genome import open_genome
    from bigbird_dna.genome.bed import read_bed
    from bigbird_dna.genome.regions import check_region, merge_regions, parse_region, tile_region
    from bigbird_dna.inference.tracks import TrackFile
    from bigbird_dna.pretrained import BigBirdDNA
    from bigbird_dna.runtime.atomic import atomic_paths
    from bigbird_dna.runtime.heartbeat import Heartbeat

    genome = open_genome(args.genome)
    lengths = genome.record_lengths
    regions = [parse_region(text, lengths) for text in args.region]
    if args.bed:
        regions += [check_region(r, lengths, f"{args.bed} ({r.record}:{r.start}-{r.end})") for r in read_bed(args.bed)]
    model = BigBirdDNA.from_pretrained(args.model, device=args.device, precision=args.precision,
                                       cuda_graphs=args.cuda_graphs)
    from bigbird_dna.model.outputs import MASKED_LM

    if model.output.kind is not MASKED_LM:
        raise InputError(f"{args.model} is a '{model.task}' model; a likelihood track needs an MLM export "
                         "(a pretraining run's export/).")
    window = args.window or model.config.max_input_tokens - 2
    if not 8 <= window:
        raise InputError(f"--window must be at least 8 bp, got {window}.")
    tiles = [tile for region in merge_regions(regions) for tile in tile_region(region, lengths[region.record], window)]
    description = (f"masked-marginal log p (nats) per base; model={args.model} window={window} "
                   f"strands={args.strands} version={__version__}")
    sizes = {record: lengths[record] for record in sorted(lengths)}  # bigWig chromosome sizes: whole contigs
    with atomic_paths([args.out]) as (temporary,), \
            TrackFile(temporary, fmt, sizes, description, name=Path(args.out).name) as track, \
            Heartbeat("scoring windows", len(tiles), "window") as beat:
        for tile in beat.track(tiles):  # in contig-name then start order, as the track needs
            seq = genome.fetch(tile.record, tile.start, tile.end)
            scores = model.score(seq, strands=args.strands, batch_size=args.batch_size, progress=False).per_base[0]
            track.add_bases(tile.record, tile.own_start, scores[tile.own_start - tile.start:tile.own_end - tile.start])
    print(f"wrote {args.out}: {track.intervals} bases scored in {len(tiles)} windows of {window} bp", file=sys.stderr)
    return Path(args.out)


def cli() -> None:
    """Console-script entry point ``bigbird-dna-score``."""
    run_inference_cli(main)


if __name__ == "__main__":
    cli()
