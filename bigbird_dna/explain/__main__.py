"""``python -m bigbird_dna.explain``: why a classifier scores a region, base by base.

Examples::

    python -m bigbird_dna.explain --model EXPORT genome.fa --region chr1:10,001-12,000 --out attr.bw
    python -m bigbird_dna.explain --model EXPORT genome.fa --bed peaks.bed --method ism \\
        --target CTCF --h5 peaks_attr.h5 --png-dir figures

Methods (--method): integrated_gradients (default; the ``explain`` extra, captum), gradient_x_input,
or ism (in-silico saturation mutagenesis: every base changed to each other letter, 3 forward passes
per base, exact). Gradients are taken before positions mix (after the embedding block, or at a
stem's input) and shared by the bases each token spells. --target picks the output of a
multi-output model (a class or label name, or a 0-based index); --output logit (default) or
probability.

Regions: --region chr:start-end is 1-based and inclusive, as samtools (chr alone = the whole
contig); --bed is 0-based and half-open, its column 6 (+ or -) the strand to read; with neither,
every record of the FASTA.

Outputs (at least one; each written atomically):

- --out FILE.bedGraph | FILE.bw: a per-base track (0-based, half-open) over the merged regions,
  tiled by windows of --window bases (default: the model's window) at half a window's stride, each
  base taken from the window where it is most central; streamed, so memory does not grow with
  the regions' length. ISM mutates only each window's own bases.
- --h5 FILE.h5: each region as one model input (all of one length, at most --window), in the
  layout ``python -m bigbird_dna.motifs learn`` reads (TF-MoDISco): one-hot ``sequences`` and
  hypothetical-contribution ``attributions``, ``[N, 4, L]``.
- --png-dir DIR: one PNG per region (at most 1,000 bp): the attribution as a sequence logo above
  the ISM heatmap of every single-base change, with coordinates and the model's score.

Bad input (an MLM export: use score; a target the model lacks; a window longer than the model
reads; a contig not in the genome; a missing extra) prints one error line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error, require_extra
from bigbird_dna.runtime.cli_args import add_device_arguments, parser_from_doc, run_inference_cli
from bigbird_dna.runtime.malloc import keep_freed_memory
from bigbird_dna.version import __version__

METHODS = ("integrated_gradients", "gradient_x_input", "ism")


def build_parser() -> argparse.ArgumentParser:
    parser = parser_from_doc("bigbird-dna-explain", __doc__)
    parser.add_argument("--model", required=True, help="a classifier export folder or save_pretrained folder")
    parser.add_argument("genome", help="FASTA (plain or gzip)")
    parser.add_argument("--region", action="append", default=[],
                        help="chr:start-end, 1-based inclusive (samtools), or chr; repeat for more")
    parser.add_argument("--bed", help="regions as BED (0-based, half-open; column 6 the strand)")
    parser.add_argument("--method", choices=METHODS, default="integrated_gradients")
    parser.add_argument("--target", default=None, help="output to explain: a name or a 0-based index")
    parser.add_argument("--output", choices=("logit", "probability"), default="logit",
                        help="explain the target's logit (default) or probability")
    parser.add_argument("--strands", choices=("+", "both"), default="+",
                        help="+ (default), or both: the mean with the reverse complement's, mirrored back")
    parser.add_argument("--window", type=int, default=None, help="model input in bp (default: the model's window)")
    parser.add_argument("--steps", type=int, default=None,
                        help="integrated gradients' path points (default: 50, doubled until complete within 1%%)")
    parser.add_argument("--batch-size", type=int, default=16, help="windows (ISM: mutants) per forward pass")
    parser.add_argument("--out", help="per-base track: FILE.bedGraph or FILE.bw")
    parser.add_argument("--h5", help="TF-MoDISco attribution file of the regions")
    parser.add_argument("--png-dir", help="folder for one figure per region (created; must be new or empty)")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines")
    add_device_arguments(parser)
    return parser


def check_args(args: argparse.Namespace) -> str | None:
    """The track format (or None); refuses missing inputs, bad sizes and missing extras before
    anything is loaded."""
    from bigbird_dna.inference.tracks import track_format
    from bigbird_dna.runtime.atomic import check_new_output_dir

    if not (args.out or args.h5 or args.png_dir):
        raise InputError("nothing to write: give --out FILE.bw (a track), --h5 FILE.h5 (for TF-MoDISco) "
                         "and/or --png-dir DIR (figures).")
    for path in (args.genome, args.bed):
        if path and not Path(path).is_file():
            raise InputError(f"input not found: {path}.")
    if args.batch_size < 1 or (args.steps is not None and args.steps < 1) or (args.window or 1) < 1:
        raise InputError("--batch-size, --steps and --window must be positive integers.")
    if args.method == "integrated_gradients":
        require_extra("captum.attr", "explain", "--method integrated_gradients")
    if args.png_dir:
        require_extra("logomaker", "explain", "--png-dir (figures)")
        check_new_output_dir(args.png_dir)
    if args.h5 and not args.h5.endswith((".h5", ".hdf5")):
        raise InputError(f"--h5 {args.h5}: end the name in .h5 or .hdf5.")
    return track_format(args.out) if args.out else None


@exit_on_input_error
def main(argv: list[str] | None = None) -> list[Path]:
    keep_freed_memory()  # CPU inference: no page faults per batch (runtime/malloc.py), as in predict and score
    args = build_parser().parse_args(argv)
    fmt = check_args(args)
    from bigbird_dna.attribution.targets import resolve_target
    from bigbird_dna.explain.outputs import (
        check_whole_regions,
        explain_regions,
        read_regions,
        write_figures,
        write_h5,
        write_track,
    )
    from bigbird_dna.explain.regions import ExplainRequest
    from bigbird_dna.genome import open_genome
    from bigbird_dna.inference.windows import model_window
    from bigbird_dna.pretrained import BigBirdDNA

    genome = open_genome(args.genome)
    regions = read_regions(args.region, args.bed, genome.record_lengths)
    model = BigBirdDNA.from_pretrained(args.model, device=args.device, precision=args.precision,
                                       cuda_graphs=args.cuda_graphs)
    target = resolve_target(model.output, args.target, args.output)  # refuses an MLM, an unknown target
    window = args.window or model_window(model.export)
    check_window(model, window, args)
    if args.h5 or args.png_dir:
        check_whole_regions(regions, window, bool(args.h5), bool(args.png_dir))
    request = ExplainRequest(args.method, target.column, args.output, args.strands, args.steps, args.batch_size)
    progress = not args.no_progress
    written = []
    if args.out:
        description = (f"{args.method} attribution of {target.name} ({args.output}) per base; model={args.model} "
                       f"window={window} strands={args.strands} version={__version__}")
        written.append(write_track(model, genome, regions, window, request, args.out, fmt, description, progress))
    if args.h5 or args.png_dir:
        explained = explain_regions(model, genome, regions, request, bool(args.png_dir), progress)
        if args.h5:
            written.append(write_h5(args.h5, explained, request, target.name, args.model))
        if args.png_dir:
            written.append(write_figures(args.png_dir, explained, request, target.name))
    for path in written:
        print(f"wrote {path}", file=sys.stderr)
    return written


def check_window(model, window: int, args: argparse.Namespace) -> None:
    """Refuse a window longer than the model reads (``max_positions`` tokens with [CLS] and [SEP])."""
    from bigbird_dna.tokenizer.specials import per_character_ids

    if per_character_ids(model.tokenizer) is not None and window > model.config.max_positions - 2:
        what = "--window" if args.window else "the model's window"
        raise InputError(f"{what} of {window} bp is longer than the model reads: at most "
                         f"{model.config.max_positions - 2} bp ({model.config.max_positions} tokens with [CLS] and "
                         f"[SEP]); give --window {model.config.max_positions - 2} or less.")


def cli() -> None:
    """Console-script entry point ``bigbird-dna-explain``."""
    run_inference_cli(main)


if __name__ == "__main__":
    cli()
