"""``python -m bigbird_dna.embed``: one embedding per FASTA record, sliding window or BED interval, as HDF5.

Examples::

    # one mean-pooled vector per record of two FASTA files (long records: per window of the model's own)
    python -m bigbird_dna.embed --model EXPORT a.fa b.fa.gz --out vectors.h5
    # 500-bp windows every 250 bp along every record
    python -m bigbird_dna.embed --model EXPORT genome.fa --window 500 --stride 250 --out windows.h5
    # the intervals of a BED file, read from a genome
    python -m bigbird_dna.embed --model EXPORT --bed peaks.bed --fasta genome.fa --pool cls --out peaks.h5

``OUT`` (HDF5) holds ``embeddings`` (float32, [N, hidden]), ``record`` (string), ``start`` and
``end`` (int64; 0-based, half-open, forward strand), and as attributes the model's task, hidden
size, tokenizer fingerprint, the pooling and the window settings. Records are read one at a time;
windows use the tiling of ``python -m bigbird_dna.predict`` (the last one aligned to the record's
end). Without ``--window``, a record up to the model's own window (its training length: 510 bp for
the default model) gives one vector, and a longer one is cut into windows of that length; a window
that needs more tokens than the model has is an error saying how many bases fit. The file is written
under a temporary name and renamed at the end; bad input prints one ``error:`` line, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Iterator

from bigbird_dna.errors import InputError, exit_on_input_error
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.bed import Region, read_bed
from bigbird_dna.genome.fasta_stream import iter_fasta
from bigbird_dna.runtime.atomic import atomic_paths
from bigbird_dna.runtime.cli_args import parser_from_doc, run_inference_cli
from bigbird_dna.runtime.malloc import keep_freed_memory
from bigbird_dna.version import __version__

CHUNK = 256  # sequences embedded per call: bounds memory on a long stream


def build_parser() -> argparse.ArgumentParser:
    parser = parser_from_doc("bigbird-dna-embed", __doc__)
    parser.add_argument("fastas", nargs="*", help="FASTA files (plain or gzip): one vector per record or window")
    parser.add_argument("--model", required=True, help="export folder or save_pretrained folder")
    parser.add_argument("--bed", default=None, help="embed these intervals of --fasta instead")
    parser.add_argument("--fasta", default=None, help="the genome the --bed intervals come from")
    parser.add_argument("--out", required=True, help="output HDF5 file, e.g. vectors.h5")
    parser.add_argument("--pool", choices=("mean", "cls"), default="mean", help="pooling (default mean)")
    parser.add_argument("--window", type=int, default=None,
                        help="cut records into windows of this many bp (default: records longer than the model's "
                             "own window are cut into windows of that length)")
    parser.add_argument("--stride", type=int, default=None, help="step between windows (default --window)")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per forward pass (default 16)")
    parser.add_argument("--device", default="auto", help="auto (GPU if any), cpu, cuda, cuda:N")
    return parser


def check_args(args: argparse.Namespace) -> None:
    """Refuse contradictory or missing inputs before the model loads."""
    if bool(args.bed) != bool(args.fasta):
        raise InputError("--bed and --fasta go together: the intervals and the genome they come from.")
    if args.bed and args.fastas:
        raise InputError("give FASTA files or --bed/--fasta, not both.")
    if not args.bed and not args.fastas:
        raise InputError("nothing to embed: give FASTA files, or --bed BED --fasta GENOME.")
    for name in ("window", "stride", "batch_size"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise InputError(f"--{name.replace('_', '-')} must be a positive integer, got {value}.")
    if args.stride and not args.window:
        raise InputError("--stride needs --window.")
    for path in [*args.fastas, *(p for p in (args.bed, args.fasta) if p)]:
        if not Path(path).is_file():
            raise InputError(f"input not found: {path}.")


def iter_sequences(args: argparse.Namespace, default_window: int) -> Iterator[tuple[Region, str]]:
    """``(region, bases)``: BED intervals, or whole records, or their windows (``--window``, or
    ``default_window`` for records longer than it)."""
    if args.bed:
        genome = open_genome(args.fasta)
        for region in read_bed(args.bed):
            yield region, genome.fetch(*region)
        return
    from bigbird_dna.inference.windows import window_starts

    for path in args.fastas:
        for record, seq in iter_fasta(path):
            if not args.window and len(seq) <= default_window:
                yield Region(record, 0, len(seq)), seq
                continue
            window = args.window or default_window
            for start in window_starts(len(seq), window, args.stride or window):
                bases = seq[start:start + window]
                yield Region(record, start, start + len(bases)), bases


@exit_on_input_error
def main(argv: list[str] | None = None) -> Path:
    keep_freed_memory()  # CPU inference: no page faults per batch (runtime/malloc.py), as in predict
    args = build_parser().parse_args(argv)
    check_args(args)
    import h5py
    import numpy as np

    from bigbird_dna.inference.batching import chunked
    from bigbird_dna.inference.windows import model_window
    from bigbird_dna.pretrained import BigBirdDNA

    model = BigBirdDNA.from_pretrained(args.model, device=args.device)
    hidden = model.config.hidden_size
    with atomic_paths([args.out]) as (tmp,), h5py.File(tmp, "w") as h5:
        vectors = h5.create_dataset("embeddings", (0, hidden), maxshape=(None, hidden), dtype="float32",
                                    chunks=(CHUNK, hidden))
        records = h5.create_dataset("record", (0,), maxshape=(None,), dtype=h5py.string_dtype())
        starts = h5.create_dataset("start", (0,), maxshape=(None,), dtype="int64")
        ends = h5.create_dataset("end", (0,), maxshape=(None,), dtype="int64")
        default_window = model_window(model.export)
        for chunk in chunked(iter_sequences(args, default_window), CHUNK):
            regions = [region for region, _ in chunk]
            embedded = model.embed([seq for _, seq in chunk], pool=args.pool, batch_size=args.batch_size,
                                   progress=False).numpy()
            n, total = len(chunk), vectors.shape[0] + len(chunk)
            for dataset in (vectors, records, starts, ends):
                dataset.resize(total, axis=0)
            vectors[total - n:] = embedded
            records[total - n:] = [r.record for r in regions]
            starts[total - n:] = np.array([r.start for r in regions])
            ends[total - n:] = np.array([r.end for r in regions])
        if vectors.shape[0] == 0:
            raise InputError("no sequence to embed: the inputs hold no record or interval.")
        h5.attrs.update({"model": str(Path(args.model).resolve()), "task": model.task, "hidden_size": hidden,
                         "pool": args.pool, "window": args.window or 0, "model_window": default_window,
                         "stride": args.stride or args.window or 0, "tokenizer_sha256": model.tokenizer.sha256,
                         "coordinates": "0-based, half-open", "bigbird_dna_version": __version__})
        written = vectors.shape[0]
    print(f"wrote {args.out} ({written} x {hidden})", file=sys.stderr)
    return Path(args.out)


def cli() -> None:
    """Console-script entry point ``bigbird-dna-embed``."""
    run_inference_cli(main)


if __name__ == "__main__":
    cli()
