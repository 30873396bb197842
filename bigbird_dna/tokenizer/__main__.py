"""Train a DNA BPE tokenizer from a genome FASTA and write ``tokenizer.json``.

Example::

    python -m bigbird_dna.tokenizer --fasta genome.fa --vocab-size 4096 --max-token-length 16 \\
        --sample-bp 2000000 --out tokenizer.json

The last ``--holdout-fraction`` of every region (record, or BED interval) is kept out of training
and bp/token is measured there.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from bigbird_dna.errors import InputError, exit_on_input_error, plain_help
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.bed import Region, read_bed
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.runtime.atomic import ensure_writable_dir
from bigbird_dna.tokenizer.bpe import train_bpe_tokenizer
from bigbird_dna.version import __version__


def split_holdout(regions: list[Region], fraction: float) -> tuple[list[Region], list[Region]]:
    """Cut the last ``fraction`` of each region off for evaluation: (train, held_out)."""
    train, held_out = [], []
    for record, start, end in regions:
        cut = end - int((end - start) * fraction)
        train.append(Region(record, start, cut))
        if cut < end:
            held_out.append(Region(record, cut, end))
    return train, held_out


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="bigbird-dna-tokenizer", description=plain_help(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--fasta", required=True, type=Path, help="genome FASTA (plain, gzip or bgzip)")
    parser.add_argument("--out", type=Path, default=Path("tokenizer.json"),
                        help="output json file, or an existing directory (default: %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=4096,
                        help="vocabulary size including special tokens (default: %(default)s)")
    parser.add_argument("--max-token-length", type=int, default=16,
                        help="longest token in bases (default: %(default)s)")
    parser.add_argument("--sample-bp", type=int, default=2_000_000,
                        help="bases of 1-10 kbp random chunks to train on (default: %(default)s)")
    parser.add_argument("--min-frequency", type=int, default=2,
                        help="minimum pair count for a merge (default: %(default)s)")
    parser.add_argument("--bed", type=Path, default=None,
                        help="train only inside these intervals, e.g. the train split (default: all records)")
    parser.add_argument("--holdout-fraction", type=float, default=0.05,
                        help="tail of each region kept out of training to measure bp/token (default: %(default)s)")
    parser.add_argument("--eval-bp", type=int, default=200_000,
                        help="held-out bases to measure bp/token on (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sampling seed (default: %(default)s)")
    return parser.parse_args(argv)


def check_writable(out: Path) -> Path:
    """The file ``--out`` names (``out/tokenizer.json`` for a folder), after proving its folder writable."""
    target = out / "tokenizer.json" if out.is_dir() else out
    try:
        ensure_writable_dir(target.parent)
    except InputError as err:
        cause = err.__cause__
        raise InputError(f"cannot write {target}: {getattr(cause, 'strerror', None) or cause}. Choose a writable "
                         "--out.") from cause
    return target


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not 0 <= args.holdout_fraction < 1:
        raise InputError(f"--holdout-fraction must be in [0, 1), got {args.holdout_fraction}.")
    if not args.fasta.is_file():
        raise InputError(f"genome FASTA not found: {args.fasta}. Pass --fasta PATH to an existing FASTA file.")
    target = check_writable(args.out)  # before the work, not after it
    started = time.perf_counter()
    genome = open_genome(args.fasta)
    regions = read_bed(args.bed) if args.bed else None
    if regions is None:
        regions = [(name, 0, length) for name, length in genome.record_lengths.items()]
    train_regions, held_out = split_holdout(regions, args.holdout_fraction)

    chunks = list(sample_training_chunks(genome, train_regions, args.sample_bp, seed=args.seed))
    print(f"sampled {sum(map(len, chunks)):,} bp in {len(chunks)} chunks from {len(train_regions)} regions "
          f"of {args.fasta}")
    tokenizer = train_bpe_tokenizer(chunks, args.vocab_size, args.max_token_length, args.min_frequency)
    try:
        out = tokenizer.save(target)
    except OSError as err:
        raise InputError(f"cannot write {target}: {err.strerror or err}; nothing was written under that name. "
                         "Free space or choose another --out.") from err
    print(f"vocab size {tokenizer.vocab_size} (max token length {args.max_token_length}), "
          f"sha256 {tokenizer.sha256[:16]}")

    longest = max((end - start for _, start, end in held_out), default=0)
    if longest:
        eval_bp = min(args.eval_bp, sum(end - start for _, start, end in held_out))
        sample = sample_training_chunks(genome, held_out, eval_bp, min_chunk_bp=min(1000, longest),
                                        seed=args.seed + 1)
        print(f"held-out bp/token {tokenizer.bp_per_token(sample):.3f} on {eval_bp:,} bp")
    else:
        print("held-out bp/token not measured (--holdout-fraction 0)")
    print(f"wrote {out} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
