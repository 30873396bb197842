"""End-to-end MLM training throughput of BigBird-base: tokens/s and peak memory, ours vs HF.

One training step is what ``python -m bigbird_dna.train`` runs per batch, without the data loader:
bf16 autocast (Lightning's ``bf16-mixed``: fp32 weights), the encoder on a full-length batch with
its all-True padding mask, the MLM loss on the 15% masked positions (``MLMTask._masked_loss``),
backward, fused AdamW step. Inputs are random token ids (throughput does not depend on them).

Rows (each: ``--warmup`` untimed steps, then ``--steps`` timed steps, CUDA-synchronised):

- ``ours``: BigBird-base (12 x 768, 12 heads, 3072 FFN, vocab ``--vocab-size``, BigBird-ITC block
  64, r=3) at T=4096, batch ``--batch``, per ``--variants`` kernel variant;
- ``hf``: ``transformers.BigBirdForMaskedLM`` of the same shape at the same batch (block_sparse,
  block 64, 3 random blocks), labels on 15% of the tokens. It computes logits for every position
  (HF's own MLM loss), ours only for the masked ones: that is part of the comparison;
- ``ours`` at each ``--long`` length (batch 1, ``max_positions`` raised to T), with and without
  ``checkpoint_layers``: tokens/s there over tokens/s at 4K shows whether the cost per token stays
  flat, and the peak memory checks the budget in ``benchmarks/README.md``.

    python benchmarks/train_throughput.py --out benchmarks/results/train_h100.json     # GPU
    python benchmarks/train_throughput.py --smoke        # CPU, tiny model, torch backend
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import environment, is_gpu, sync  # noqa: E402

BASE = {"hidden_size": 768, "num_layers": 12, "num_heads": 12, "intermediate_size": 3072, "dropout": 0.1}
TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "dropout": 0.1}
TARGETS = {"ours_over_hf_at_4k": 5.0, "longest_over_4k_tokens_per_s": 0.8}


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, default=4096, help="the ours-vs-HF length (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=4, help="batch at --seq (default: %(default)s)")
    parser.add_argument("--long", type=int, nargs="*", default=[16384, 65536], help="longer lengths, batch 1")
    parser.add_argument("--variants", nargs="+", default=["loop"], help="our kernel variants at --seq")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers baseline")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--smoke", action="store_true",
                        help="CPU check of the script: tiny model, 128/256 tokens, torch backend, 1+1 steps")
    args = parser.parse_args(argv)
    args.shape, args.backend, args.device = BASE, "auto", "cuda"
    if args.smoke:
        args.shape, args.backend, args.device = TINY, "torch", "cpu"
        args.seq, args.batch, args.long, args.vocab_size, args.block = 128, 2, [256], 64, 16
        args.warmup, args.steps = 1, 1
    return args


def encoder_config(args, seq: int, checkpoint_layers: bool) -> dict:
    return {**args.shape, "vocab_size": args.vocab_size, "max_positions": seq, "checkpoint_layers": checkpoint_layers,
            "attention": {"preset": "bigbird_itc", "block_size": args.block, "backend": args.backend,
                          "params": {"window": 3, "num_random": 3, "global_per_end": 1}}}


def mlm_batch(batch: int, seq: int, vocab: int, device) -> dict:
    """Random ids in ``[5, vocab)``, all real tokens, 15% of positions labelled (``[B, T]`` each)."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (batch, seq), generator=g)
    labels = torch.where(torch.rand(batch, seq, generator=g) < 0.15, ids, torch.full_like(ids, -100))
    return {"input_ids": ids.to(device), "attention_mask": torch.ones(batch, seq, dtype=torch.bool, device=device),
            "labels": labels.to(device)}


def ours_loss(args, seq: int, checkpoint_layers: bool):
    from bigbird_dna.tasks.mlm import MLMTask

    task = MLMTask(encoder_config(args, seq, checkpoint_layers), optim={})
    return task, lambda batch: task._masked_loss(batch)[0]


def hf_loss(args, seq: int):
    from transformers import BigBirdConfig, BigBirdForMaskedLM

    config = BigBirdConfig(vocab_size=args.vocab_size, hidden_size=args.shape["hidden_size"],
                           num_hidden_layers=args.shape["num_layers"], num_attention_heads=args.shape["num_heads"],
                           intermediate_size=args.shape["intermediate_size"], max_position_embeddings=seq,
                           attention_type="block_sparse", block_size=args.block, num_random_blocks=3,
                           hidden_act="gelu")
    model = BigBirdForMaskedLM(config)
    return model, lambda batch: model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"].long(),
                                      labels=batch["labels"]).loss


def time_training(model, loss_fn, batch: dict, args) -> dict:
    """Median step time, tokens/s and peak memory of ``--steps`` AdamW steps after ``--warmup``."""
    device = args.device
    model.to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=is_gpu(device))
    autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16, enabled=is_gpu(device))

    def step():
        with autocast:
            loss = loss_fn(batch)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss

    first = time.perf_counter()
    for _ in range(args.warmup):
        step()
    sync(device)
    first_s = time.perf_counter() - first
    if is_gpu(device):
        torch.cuda.reset_peak_memory_stats(device)
    times = []
    for _ in range(args.steps):
        start = time.perf_counter()
        loss = step()
        sync(device)
        times.append(time.perf_counter() - start)
    tokens = batch["input_ids"].numel()
    step_s = statistics.median(times)
    return {"tokens_per_step": tokens, "step_ms": step_s * 1e3, "tokens_per_s": tokens / step_s,
            "warmup_s": first_s, "loss": loss.item(),
            "peak_gib": torch.cuda.max_memory_allocated(device) / 2**30 if is_gpu(device) else None,
            "params_m": sum(p.numel() for p in model.parameters()) / 1e6}


def run_row(payload: dict, name: str, build, batch: int, seq: int, args, **extra) -> None:
    """Time one configuration and add its row to ``payload`` (written to ``--out`` at once)."""
    row = {"method": name, "batch": batch, "seq": seq, **extra}
    print(f"{name} B={batch} T={seq} {extra}", file=sys.stderr, flush=True)
    try:
        model, loss_fn = build()
        row.update(time_training(model, loss_fn, mlm_batch(batch, seq, args.vocab_size, args.device), args))
        del model, loss_fn
    except torch.OutOfMemoryError:
        row["skipped"] = "out of memory"
    except ImportError as err:
        row["skipped"] = f"not importable: {err}"
    except Exception as err:  # noqa: BLE001 - a failing row is reported, the others still run
        row["skipped"] = f"failed: {type(err).__name__}: {err}"[:300]
    if is_gpu(args.device):
        torch.cuda.empty_cache()
    payload["results"].append(row)
    payload["summary"] = summarise(payload["results"], args)
    if args.out:  # after every row, so a run cut short keeps what it measured
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(payload, indent=2, default=str))


def set_kernel_variant(name: str | None) -> None:
    """Make ``name`` (a ``triton_kernels.VARIANTS`` key) the encoder's kernel options."""
    if name is None:
        return
    from bigbird_dna.attention import triton_kernels

    triton_kernels.DEFAULT_OPTIONS = triton_kernels.VARIANTS[name]


def summarise(rows: list[dict], args) -> dict:
    done = {(r["method"], r["seq"], r.get("variant"), r.get("checkpoint_layers")): r for r in rows if "skipped" not in r}
    ours = [r for (m, s, _, ckpt), r in done.items() if m == "ours" and s == args.seq and not ckpt]
    best = max(ours, key=lambda r: r["tokens_per_s"], default=None)
    hf = done.get(("hf", args.seq, None, None))
    longest = max((r for r in rows if "skipped" not in r and r["method"] == "ours" and r["seq"] > args.seq),
                  key=lambda r: (r["seq"], r["tokens_per_s"]), default=None)
    summary = {"targets": TARGETS, "best_variant_at_seq": best and best.get("variant")}
    if best and hf:
        summary["ours_over_hf_at_4k"] = best["tokens_per_s"] / hf["tokens_per_s"]
    if best and longest:
        summary["longest_seq"] = longest["seq"]
        summary["longest_over_4k_tokens_per_s"] = longest["tokens_per_s"] / best["tokens_per_s"]
    return summary


def markdown_table(rows: list[dict]) -> str:
    lines = ["| method | variant | ckpt | B | T | tokens/s | step ms | peak GiB |", "|" + "---|" * 8]
    for r in rows:
        lead = f"| {r['method']} | {r.get('variant') or '-'} | {r.get('checkpoint_layers', '-')} | {r['batch']} | {r['seq']} "
        if "skipped" in r:
            lines.append(f"{lead}| skipped: {r['skipped']} |||")
        else:
            peak = "-" if r["peak_gib"] is None else f"{r['peak_gib']:.1f}"
            lines.append(f"{lead}| {r['tokens_per_s']:.0f} | {r['step_ms']:.1f} | {peak} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if not args.smoke and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU, or pass --smoke for the CPU check")
    payload = {"benchmark": "train_throughput", "smoke": args.smoke, "environment": environment(args.device),
               "model": args.shape, "vocab_size": args.vocab_size, "results": [], "summary": {}}
    variants = args.variants if is_gpu(args.device) else [None]
    for variant in variants:
        set_kernel_variant(variant)
        run_row(payload, "ours", lambda: ours_loss(args, args.seq, False), args.batch, args.seq, args,
                variant=variant, checkpoint_layers=False)
    if not args.no_hf:
        run_row(payload, "hf", lambda: hf_loss(args, args.seq), args.batch, args.seq, args)
    set_kernel_variant(variants[0])
    for seq in args.long:
        for ckpt in (False, True):
            run_row(payload, "ours", lambda seq=seq, ckpt=ckpt: ours_loss(args, seq, ckpt), 1, seq, args,
                    variant=variants[0], checkpoint_layers=ckpt)
    print(markdown_table(payload["results"]) + "\n\n" + json.dumps(payload["summary"]))
    return payload


if __name__ == "__main__":
    main()
