"""How fast the prediction pipeline runs without a model: the rate a GPU scan can be fed at.

    python benchmarks/scan_pipeline.py [--size-mbp 20] [--batch-sizes 16 256] [--tokenizers char kmer6]
                                       [--workers 0 2]

Writes a random ``--size-mbp`` FASTA (one record, 60-bp lines) and runs ``predict``'s pipeline over
it with a model that returns zeros at once: streaming the FASTA in chunks, cutting 500-bp windows
at stride 500 on both strands (reverse complements included), tokenizing them with the char
tokenizer (or non-overlapping 6-mers, ``kmer6``, or a 4096-token BPE trained on the bundled
genome, ``bpe4096``) on the background thread, or on ``--workers`` tokenizer processes (their
start-up, about a second each, is inside the time), batching, and combining the two strands' rows
(:func:`~bigbird_dna.inference.windows.iter_windows`, :func:`~bigbird_dna.inference.scan.score_windows`,
:func:`~bigbird_dna.inference.batching.window_batches`,
:func:`~bigbird_dna.inference.scan.combine_strands`). Mbp/min counts forward-strand bases, as a
both-strand scan target does (e.g. 0.5 Gbp/min = 500 Mbp/min on one H100). Writing the TSV is
not included. Results: ``scan_pipeline.json`` in ``benchmarks/results/<date>_<machine>/``; run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import WINDOW_BP, machine  # noqa: E402
from bigbird_dna.inference.scan import combine_strands, score_windows  # noqa: E402
from bigbird_dna.inference.windows import iter_windows  # noqa: E402
from bigbird_dna.tokenizer.fixed import char_tokenizer, kmer_tokenizer  # noqa: E402


def bpe_tokenizer(vocab_size: int = 4096):
    """A BPE tokenizer trained on the bundled H. pylori genome (10-kbp chunks), as a run trains one."""
    from bigbird_dna.tokenizer import train_bpe_tokenizer

    fasta = REPO / "sample_data" / "h_pylori_F32.fa"
    genome = "".join(line.strip() for line in open(fasta) if not line.startswith(">"))
    return train_bpe_tokenizer([genome[i:i + 10_000] for i in range(0, len(genome), 10_000)], vocab_size=vocab_size,
                               max_token_length=16)


TOKENIZERS = {"char": char_tokenizer, "kmer6": lambda: kmer_tokenizer(6), "bpe4096": bpe_tokenizer}


def write_random_fasta(path: Path, size_bp: int, seed: int = 0) -> Path:
    """One record of ``size_bp`` uniform random bases, 60 per line."""
    rng = np.random.default_rng(seed)
    with open(path, "w") as out:
        out.write(">random\n")
        for start in range(0, size_bp, 6_000_000):
            codes = rng.integers(0, 4, size=min(6_000_000, size_bp - start))
            text = np.frombuffer(b"ACGT", dtype=np.uint8)[codes].tobytes().decode()
            out.write("\n".join(text[i:i + 60] for i in range(0, len(text), 60)) + "\n")
    return path


def no_model(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Scores ``[B, 1]`` of zeros: the model's place in the pipeline, at no cost."""
    return torch.zeros(input_ids.shape[0], 1)


def run(fasta: Path, batch_size: int, name: str = "char", workers: int = 0) -> dict:
    """One pass of the pipeline over ``fasta`` with tokenizer ``name``; its time and counts (the
    tokenizer is built before the clock starts; worker processes are started after)."""
    tokenizer = TOKENIZERS[name]()
    started = time.perf_counter()
    windows = iter_windows([fasta], WINDOW_BP, WINDOW_BP, ("+", "-"))
    scored = score_windows(no_model, tokenizer, windows, batch_size, WINDOW_BP + 2, torch.device("cpu"),
                           workers=workers)
    rows = bases = 0
    for _, window, _, _ in combine_strands(scored, ("+", "-"), "mean"):
        rows += 1
        bases += window.end - window.start
    seconds = time.perf_counter() - started
    return {"tokenizer": name, "workers": workers, "batch_size": batch_size, "seconds": round(seconds, 2),
            "rows": rows, "bases": bases, "mbp_per_min": round(bases / 1e6 / seconds * 60, 1)}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mbp", type=float, default=20.0)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 256])
    parser.add_argument("--tokenizers", nargs="+", choices=sorted(TOKENIZERS), default=["char"])
    parser.add_argument("--workers", type=int, nargs="+", default=[0], help="tokenizer processes (0: a thread)")
    add_out_argument(parser, "scan_pipeline")
    args = parser.parse_args(argv)
    before = machine()
    with tempfile.TemporaryDirectory() as tmp:
        fasta = write_random_fasta(Path(tmp) / "random.fa", int(args.size_mbp * 1e6))
        runs = [run(fasta, batch_size, tokenizer, workers) for tokenizer in args.tokenizers
                for workers in args.workers for batch_size in args.batch_sizes]
    result = {"benchmark": "scan_pipeline", "what": "predict's pipeline with a zero-cost model (module docstring)",
              "size_mbp": args.size_mbp, "window_bp": WINDOW_BP, "stride_bp": WINDOW_BP, "strands": "both",
              "runs": runs, "torch_threads": torch.get_num_threads(),
              "machine_before": before, "machine_after": machine()}
    path = write_json(args.out or default_out("scan_pipeline"), {**result, "command": script_command(__file__, argv)})
    print(json.dumps(runs, indent=1))
    return path


if __name__ == "__main__":
    main()
