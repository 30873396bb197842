"""Genome-scanning throughput of a promoter model, end to end, in Gbp per minute.

Target: BigBird-base (12 x 768, 12 heads, ITC block 64) at 4096 tokens, both strands scored,
stride equal to the window: at least 0.5 Gbp/min on one H100, measured on at least 200 Mbp
(``--genome-mbp 200``; the suite's default call scans 20 Mbp to fit its 8.5 minutes, see
``gpu_suite.sh``'s ``PROMOTER_MBP``).

What runs:

1. A BPE tokenizer is trained on the bundled H. pylori genome (``--vocab-size``, 32000 as in the
   paper) or loaded (``--tokenizer``).
2. The window is calibrated: the largest ``window_bp`` (a multiple of 100) whose windows of the
   test genome (both strands) all fit in ``--tokens`` (4096) including [CLS] and [SEP].
3. A promoter model with random weights is exported (throughput does not depend on the weights).
4. A test genome of ``--genome-mbp`` Mbp (the H. pylori genome repeated, as one FASTA of
   several records) is scanned by the real ``python -m bigbird_dna.predict`` code path, after a
   warm-up scan (Triton compilation, autotuning): FASTA reading, windows, reverse complements,
   tokenization on worker processes (``--tokenizer-workers auto``), pinned non-blocking copies,
   bf16 forward passes replayed from CUDA graphs, TSV/BED writing.

The test genome is the tokenizer's own training genome repeated, so its bp per token (reported)
can exceed that of a held-out genome; Gbp/min scales with it (the paper's tokenizer: 8.78 bp/token
on GRCh37). Pass ``--tokenizer`` and ``--fasta`` to measure with a real tokenizer and genome.

Reported: end-to-end Gbp/min (genome bp, each base scored on both strands), windows/s, and a
model-only figure (forward passes on pre-tokenized random ids) to show whether the GPU or the
host side (tokenization) bounds the scan. ``--smoke`` runs a tiny model on a small genome on CPU,
to check the script, not the target. Results: --out (default:
``benchmarks/results/<date>_<machine>/promoter_scan.json``; a smoke run writes only with --out).

    python benchmarks/promoter_scan.py            # GPU
    python benchmarks/promoter_scan.py --smoke    # CPU, 1-2 min
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.common.provenance import recorded_state  # noqa: E402
from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402

TARGET_GBP_PER_MIN = 0.5
BASE = {"hidden_size": 768, "num_layers": 12, "num_heads": 12, "intermediate_size": 3072, "dropout": 0.1,
        "attention": {"preset": "bigbird_itc", "block_size": 64,
                      "params": {"window": 3, "num_random": 3, "global_per_end": 1}}}
TINY = {"hidden_size": 64, "num_layers": 2, "num_heads": 2, "intermediate_size": 128, "dropout": 0.1,
        "attention": {"preset": "bigbird_itc", "block_size": 16,
                      "params": {"window": 3, "num_random": 3, "global_per_end": 1}}}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fasta", type=Path, default=REPO / "sample_data" / "h_pylori_F32.fa",
                        help="genome to train the tokenizer on and repeat (default: %(default)s)")
    parser.add_argument("--tokenizer", type=Path, default=None, help="tokenizer.json to load instead of training")
    parser.add_argument("--vocab-size", type=int, default=32000, help="when training (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=4096, help="model context in tokens (default: %(default)s)")
    parser.add_argument("--genome-mbp", type=float, default=200.0, help="test genome size (default: %(default)s)")
    parser.add_argument("--batch-size", type=int, default=16, help="windows per forward pass (default: %(default)s)")
    parser.add_argument("--device", default="auto", help="auto, cuda or cpu (default: %(default)s)")
    parser.add_argument("--smoke", action="store_true", help="tiny model, 0.1 Mbp genome, CPU: checks the script")
    add_out_argument(parser, "promoter_scan")
    args = parser.parse_args(argv)
    if args.smoke:
        args.vocab_size, args.tokens, args.genome_mbp, args.batch_size = 512, 256, 0.1, 8
        args.device = "cpu" if args.device == "auto" else args.device
    return args


def genome_records(fasta: Path) -> list[str]:
    from bigbird_dna.genome.fasta_stream import iter_fasta

    return [seq.upper() for _, seq in iter_fasta(fasta)]


def write_test_genome(path: Path, source: list[str], total_bp: int, record_bp: int = 50_000_000) -> int:
    """Repeat ``source`` into records of at most ``record_bp`` until ``total_bp``; returns the bp written."""
    unit = "".join(source)
    written, index = 0, 0
    with open(path, "w") as out:
        while written < total_bp:
            size = min(record_bp, total_bp - written)
            seq = (unit * (size // len(unit) + 1))[:size]
            out.write(f">chr{index}\n")
            out.writelines(seq[i:i + 80] + "\n" for i in range(0, size, 80))
            written, index = written + size, index + 1
    return written


def calibrate_window(tokenizer, seqs: list[str], max_tokens: int) -> int:
    """Largest window (multiple of 100 bp) whose windows of ``seqs`` all fit, on both strands.

    The windows checked are the scan's own: per contig, stride equal to the window, plus the
    window that ends at the contig's end, each also reverse-complemented (the scan scores both
    strands, and a reverse complement can take more tokens than its forward strand).
    """
    from bigbird_dna.genome.sequence import reverse_complement

    body = max_tokens - 2
    window = int(body * tokenizer.bp_per_token([seqs[0][:2_000_000]]) * 1.1) // 100 * 100
    while window > 100:
        windows = [seq[start:start + window] for seq in seqs if len(seq) >= window
                   for start in [*range(0, len(seq) - window + 1, window), len(seq) - window]][:4000]
        windows += [reverse_complement(w) for w in windows]
        longest = max(map(len, tokenizer.encode_batch(windows)))
        if longest <= body:
            return window
        window = min(window - 100, int(window * body / longest) // 100 * 100)  # shrink by the overshoot
    raise SystemExit("could not find a window that fits the context")


def model_only_windows_per_s(model, vocab_size: int, batch: int, tokens: int, device, precision: str) -> float:
    ids = torch.randint(5, vocab_size, (batch, tokens), device=device)
    mask = None  # full windows: predict passes no padding mask either
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16")
    with torch.inference_mode(), autocast:
        for _ in range(2):
            model(ids, mask)
        if device.type == "cuda":
            torch.cuda.synchronize()
        repeats, start = 5, time.perf_counter()
        for _ in range(repeats):
            model(ids, mask)
        if device.type == "cuda":
            torch.cuda.synchronize()
    return repeats * batch / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> dict:
    args = parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    from bigbird_dna.inference.device import resolve_device
    from bigbird_dna.model.export import write_export
    from bigbird_dna.predict import main as predict
    from bigbird_dna.tasks.promoter import PromoterTask
    from bigbird_dna.tokenizer import DNATokenizer, train_bpe_tokenizer

    device = resolve_device(args.device)
    precision = "bf16" if device.type == "cuda" else "fp32"
    seqs = genome_records(args.fasta)
    if args.tokenizer:
        tokenizer = DNATokenizer.load(args.tokenizer)
    else:
        chunks = [s[i:i + 10_000] for s in seqs for i in range(0, len(s), 10_000)]
        tokenizer = train_bpe_tokenizer(chunks, vocab_size=args.vocab_size, max_token_length=32)
    shape = TINY if args.smoke else BASE
    model = {**shape, "vocab_size": tokenizer.vocab_size, "pad_id": 0, "max_positions": args.tokens}
    module = PromoterTask(model, {}, num_labels=1, head={"dropout": 0.1})
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        genome_bp = write_test_genome(tmp / "genome.fa", seqs, int(args.genome_mbp * 1e6))
        # calibrated on the scanned genome itself: its windows start at other phases of the source
        window = calibrate_window(tokenizer, genome_records(tmp / "genome.fa"), args.tokens)
        export = write_export(tmp / "export", "promoter", module.state_dict(), module.config.to_dict(), tokenizer,
                              task_config={"name": "promoter", "head": {"dropout": 0.1}, "predict_window_bp": window})
        warmup_bp = write_test_genome(tmp / "warmup.fa", seqs, min(genome_bp, 64 * window))
        common = ["--model", str(export), "--window", str(window), "--stride", str(window), "--strands", "both",
                  "--batch-size", str(args.batch_size), "--device", str(device), "--no-progress"]
        predict([str(tmp / "warmup.fa"), *common, "--out-prefix", str(tmp / "warmup")])
        start = time.perf_counter()
        predict([str(tmp / "genome.fa"), *common, "--out-prefix", str(tmp / "scan")])
        seconds = time.perf_counter() - start
        windows = sum(1 for line in open(tmp / "scan.tsv") if not line.startswith("#")) - 1
    scanner = PromoterTask(model, {}, num_labels=1).to(device).eval()
    model_only = model_only_windows_per_s(scanner.predict_proba, tokenizer.vocab_size, args.batch_size,
                                          args.tokens, device, precision)
    gbp_per_min = genome_bp / seconds / 1e9 * 60
    result = {
        "benchmark": "promoter_scan", "smoke": args.smoke, **recorded_state(),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu",
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"), "model": shape, "tokens": args.tokens,
        "vocab_size": tokenizer.vocab_size, "bp_per_token": round(tokenizer.bp_per_token(seqs), 2),
        "window_bp": window, "stride_bp": window, "strands": "both",
        "precision": precision, "batch_size": args.batch_size, "genome_bp": genome_bp, "warmup_bp": warmup_bp,
        "seconds": round(seconds, 2), "windows_scored": windows * 2, "windows_per_s": round(windows * 2 / seconds, 1),
        "gbp_per_min": round(gbp_per_min, 4), "model_only_windows_per_s": round(model_only, 1),
        "model_only_gbp_per_min": round(model_only / 2 * window / 1e9 * 60, 4),
        "target_gbp_per_min": TARGET_GBP_PER_MIN,
        "meets_target": None if args.smoke else gbp_per_min >= TARGET_GBP_PER_MIN,
        "command": script_command(__file__, argv),
    }
    print(json.dumps(result, indent=2))
    out = args.out or (None if args.smoke else default_out("promoter_scan", device=device.type))
    if out:
        write_json(out, result)
    return result


if __name__ == "__main__":
    main()
