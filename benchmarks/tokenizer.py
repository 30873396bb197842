"""Encoding throughput of the DNA BPE tokenizer, in Mbp/s, on genome windows of several sizes.

Trains a tokenizer on the bundled H. pylori genome (or loads ``--tokenizer``), cuts the genome into
non-overlapping windows of each ``--windows-bp`` size and times, best of ``--repeats``:

- ``encode``: one window at a time on ONE core (``RAYON_NUM_THREADS=1``), wall and CPU time;
- ``encode_batch``: batches of ``--batch-size`` windows, with 1 thread and with ``--threads``.

Each thread count runs in its own child process, because the Rust thread pool is sized once, from
``RAYON_NUM_THREADS``, when ``tokenizers`` first uses it. CPU-time Mbp/s is the number to trust on a
shared machine. Target: >= 2 Mbp/s on one core.

    python benchmarks/tokenizer.py   # benchmarks/results/<date>_<machine>/tokenizer.json
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

TARGET_MBPS = 2.0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fasta", type=Path, default=REPO / "sample_data" / "h_pylori_F32.fa",
                        help="genome (default: %(default)s)")
    parser.add_argument("--tokenizer", type=Path, default=None, help="tokenizer.json to load instead of training one")
    parser.add_argument("--vocab-size", type=int, default=4096, help="when training (default: %(default)s)")
    parser.add_argument("--max-token-length", type=int, default=16, help="when training (default: %(default)s)")
    parser.add_argument("--sample-bp", type=int, default=2_000_000, help="when training (default: %(default)s)")
    parser.add_argument("--windows-bp", default="4096,16384,36000,100000",
                        help="comma-separated window sizes in bp (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=16,
                        help="windows per encode_batch call (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="threads for the multi-thread run (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats, best kept (default: %(default)s)")
    add_out_argument(parser, "tokenizer")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def best_of(repeats: int, fn) -> tuple[float, float]:
    """Fastest (wall, cpu) seconds of ``repeats`` calls."""
    runs = []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        runs.append((time.perf_counter() - wall, time.process_time() - cpu))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def measure(args: argparse.Namespace) -> list[dict]:
    """Worker: time encode / encode_batch for each window size in this process's thread pool."""
    from bigbird_dna.genome import open_genome
    from bigbird_dna.tokenizer import DNATokenizer

    tokenizer = DNATokenizer.load(args.tokenizer)
    with open_genome(args.fasta) as genome:
        genome_seq = "".join(genome.fetch(name, 0, length) for name, length in genome.record_lengths.items())
    rows = []
    for window in map(int, args.windows_bp.split(",")):
        windows = [genome_seq[i:i + window] for i in range(0, len(genome_seq) - window + 1, window)]
        batches = [windows[i:i + args.batch_size] for i in range(0, len(windows), args.batch_size)]
        bp = window * len(windows)
        single = best_of(args.repeats, lambda: [tokenizer.encode(w) for w in windows])
        batch = best_of(args.repeats, lambda: [tokenizer.encode_batch(b) for b in batches])
        rows.append({"window_bp": window, "windows": len(windows),
                     "bp_per_token": tokenizer.bp_per_token(windows),
                     "encode_mbps_wall": bp / single[0] / 1e6, "encode_mbps_cpu": bp / single[1] / 1e6,
                     "encode_batch_mbps_wall": bp / batch[0] / 1e6})
    return rows


def run_worker(args: argparse.Namespace, tokenizer_path: Path, threads: int) -> list[dict]:
    env = {**os.environ, "RAYON_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "true"}
    cmd = [sys.executable, __file__, "--worker", "--tokenizer", str(tokenizer_path), "--fasta", str(args.fasta),
           "--windows-bp", args.windows_bp, "--batch-size", str(args.batch_size), "--repeats", str(args.repeats)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def trained_tokenizer(args: argparse.Namespace, folder: Path) -> tuple[Path, float]:
    from bigbird_dna.genome import open_genome
    from bigbird_dna.genome.sampling import sample_training_chunks
    from bigbird_dna.tokenizer import train_bpe_tokenizer

    started = time.perf_counter()
    chunks = sample_training_chunks(open_genome(args.fasta), None, args.sample_bp, seed=0)
    tokenizer = train_bpe_tokenizer(chunks, args.vocab_size, args.max_token_length)
    return tokenizer.save(folder / "tokenizer.json"), time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args)))
        return
    with tempfile.TemporaryDirectory() as folder:
        train_s = None
        path = args.tokenizer
        if path is None:
            path, train_s = trained_tokenizer(args, Path(folder))
            print(f"trained vocab {args.vocab_size}, max token length {args.max_token_length} on "
                  f"{args.sample_bp:,} bp of {args.fasta.name} in {train_s:.1f} s")
        one, many = run_worker(args, path, 1), run_worker(args, path, args.threads)
    print(f"{'window bp':>10} {'windows':>8} {'bp/token':>9} {'encode 1 core':>14} {'(cpu time)':>11} "
          f"{'batch 1 thr':>12} {f'batch {args.threads} thr':>12}   Mbp/s")
    for a, b in zip(one, many):
        print(f"{a['window_bp']:>10,} {a['windows']:>8} {a['bp_per_token']:>9.3f} "
              f"{a['encode_mbps_wall']:>14.2f} {a['encode_mbps_cpu']:>11.2f} {a['encode_batch_mbps_wall']:>12.2f} "
              f"{b['encode_batch_mbps_wall']:>12.2f}")
    slowest = min(r["encode_mbps_cpu"] for r in one)
    print(f"target >= {TARGET_MBPS} Mbp/s on one core (CPU time, slowest window): "
          f"{'met' if slowest >= TARGET_MBPS else 'MISSED'} ({slowest:.2f})")
    write_json(args.out or default_out("tokenizer"), {
        "fasta": str(args.fasta), "tokenizer": str(args.tokenizer or "trained"),
        "vocab_size": args.vocab_size if train_s else None,
        "max_token_length": args.max_token_length if train_s else None, "train_s": train_s,
        "batch_size": args.batch_size, "threads": args.threads, "single_thread": one, "multi_thread": many,
        "command": script_command(__file__, argv)})


if __name__ == "__main__":
    main()
