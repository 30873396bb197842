"""End-to-end MLM training throughput of BigBird-base: tokens/s, MFU and peak memory, ours vs HF.

One training step is what ``python -m bigbird_dna.train`` runs per batch, without the data loader:
bf16 autocast (Lightning's ``bf16-mixed``: fp32 weights), the encoder on a full-length batch
without a padding mask (as training passes full batches), the MLM loss on the 15% masked positions
(``MLMTask._masked_loss``), backward, fused AdamW step. Inputs are random token ids (throughput
does not depend on them).

Timing: ``--warmup`` untimed steps, then ``--repeats`` x ``--steps`` steps (at least 3 x 50 on a
GPU), each step CUDA-synchronised; the step time is the median of the repeats' median steps
(``timing.repeat_stats``: every repeat's median and the spread are recorded too). MFU:
``benchmarks/common/mfu.py`` (6 x non-embedding parameters x tokens + block-sparse attention FLOPs,
over the GPU's dense bf16 peak by device name). Rows, in this order:

- ``ours`` at equal tokens per step: T in ``--scaling-seq`` at batch ``--tokens`` / T (4K x 16,
  16K x 4, 64K x 1 = 65,536 tokens each): tokens/s at 16K and 64K over 4K compares like with
  like, and the 4K row gives the MFU of BigBird-base at 4K;
- ``ours+compile``: the 4K equal-tokens row again with the layers' non-attention parts under
  ``torch.compile`` (``BigBirdEncoder.compile_layers``; ``--compile-backend``), after the eager
  scaling rows; its warm-up time includes compiling. MFU at 4K is the better of the two rows;
- ``ours`` at ``--seq`` x ``--batch`` (4K x 4: HF's activations take 26 GiB there), per
  ``--variants`` kernel variant (default: the default variant); ``--batch 0``: none of these
  rows, and no HF row;
- memory rows (``checkpoint_layers``) at ``--checkpoint-seq``, batch 1, ``--memory-steps`` timed
  steps: their peak memory checks the budget in ``benchmarks/README.md``; they time nothing
  that a target reads;
- ``hf``: ``transformers.BigBirdForMaskedLM`` (block_sparse, block 64, 3 random blocks) at
  ``--seq`` x ``--batch``, last (the slowest row, and no target reads it). HF computes logits for
  every position (its own MLM loss), ours only for the masked ones: that is part of the comparison.

``--budget-s``: a row not started within that many seconds is recorded as skipped. Results: --out
(default: ``benchmarks/results/<date>_<machine>/train_throughput.json``; a smoke run writes only with
--out), rewritten after every row.

    python benchmarks/train_throughput.py                # GPU: every row
    python benchmarks/train_throughput.py --smoke        # CPU, tiny model, torch backend
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common import mfu  # noqa: E402
from benchmarks.common.harness import environment, is_gpu, sync  # noqa: E402
from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.common.timing import MIN_ITERATIONS, MIN_REPEATS, repeat_stats  # noqa: E402
from benchmarks.common.train_report import markdown_table, summarise  # noqa: E402

BASE = {"hidden_size": 768, "num_layers": 12, "num_heads": 12, "intermediate_size": 3072, "dropout": 0.1}
TINY = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "dropout": 0.1}
PATTERN = {"window": 3, "num_random": 3, "global_per_end": 1}
# a smoke run's sizes: defaults, so that options given explicitly (which rows) still apply
SMOKE = {"seq": 128, "batch": 2, "tokens": 512, "scaling_seq": [128, 256], "checkpoint_seq": [256], "vocab_size": 64,
         "block": 16, "warmup": 1, "steps": 1, "repeats": 1, "memory_steps": 1,
         "compile_backend": "aot_eager"}  # aot_eager traces like Inductor, without a C++ build
MFU_CONVENTION = ("model FLOPs per step = 6 x non-embedding parameters x tokens + batch x sum over layers of "
                  "nnz blocks x 4 b^2 d x 3.5 (forward + 2.5x backward); MFU = that / step time / dense bf16 peak")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, default=4096, help="the ours-vs-HF length (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=4,
                        help="batch of the ours-vs-HF rows (0: none of them; default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=65536, help="tokens per step of the scaling rows (0: none)")
    parser.add_argument("--scaling-seq", type=int, nargs="*", default=[4096, 16384, 65536])
    parser.add_argument("--checkpoint-seq", type=int, nargs="*", default=[65536],
                        help="memory rows with checkpoint_layers, batch 1")
    parser.add_argument("--variants", nargs="+", default=[None],
                        help="our kernel variants at --seq (default: DEFAULT_OPTIONS)")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--steps", type=int, default=MIN_ITERATIONS, help="timed steps per repeat (>= 50 on a GPU)")
    parser.add_argument("--repeats", type=int, default=MIN_REPEATS, help="(>= 3 on a GPU)")
    parser.add_argument("--memory-steps", type=int, default=5, help="timed steps of a memory row")
    parser.add_argument("--no-hf", action="store_true", help="skip the transformers baseline")
    parser.add_argument("--no-compile", action="store_true", help="skip the ours+compile row")
    parser.add_argument("--compile-backend", default="inductor", help="torch.compile backend of ours+compile")
    parser.add_argument("--budget-s", type=float, default=None, help="skip rows not started within this many seconds")
    add_out_argument(parser, "train_throughput")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU check of the script: tiny model, 128/256 tokens, torch backend, 1+1 steps")
    args = parser.parse_args(argv)
    args.shape, args.backend, args.device = BASE, "auto", "cuda"
    if args.smoke:
        parser.set_defaults(**SMOKE)
        args = parser.parse_args(argv)
        args.shape, args.backend, args.device = TINY, "torch", "cpu"
    elif args.steps < MIN_ITERATIONS or args.repeats < MIN_REPEATS:
        parser.error(f"--steps must be >= {MIN_ITERATIONS} and --repeats >= {MIN_REPEATS}")
    return args


def encoder_config(args, seq: int, checkpoint_layers: bool) -> dict:
    return {**args.shape, "vocab_size": args.vocab_size, "max_positions": seq, "checkpoint_layers": checkpoint_layers,
            "attention": {"preset": "bigbird_itc", "block_size": args.block, "backend": args.backend,
                          "params": PATTERN}}


def mlm_batch(batch: int, seq: int, vocab: int, device) -> dict:
    """Random ids in ``[5, vocab)``, all real tokens, 15% of positions labelled (``[B, T]`` each),
    as training now hands them to the model: no padding mask (``None``: a full batch drops it on
    the host) and the scored positions found on the host (``selected_index``, the MLM collator's)."""
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (batch, seq), generator=g)
    labels = torch.where(torch.rand(batch, seq, generator=g) < 0.15, ids, torch.full_like(ids, -100))
    return {"input_ids": ids.to(device), "attention_mask": None, "labels": labels.to(device),
            "selected_index": (labels != -100).flatten().nonzero()[:, 0].to(device)}


def ours_loss(args, seq: int, checkpoint_layers: bool, compiled: bool = False):
    from bigbird_dna.tasks.mlm import MLMTask

    task = MLMTask(encoder_config(args, seq, checkpoint_layers), optim={})
    if compiled:
        task.encoder.compile_layers(backend=args.compile_backend)
    return task, lambda batch: task._masked_loss(batch)[0]


def hf_loss(args, seq: int):
    from transformers import BigBirdConfig, BigBirdForMaskedLM

    config = BigBirdConfig(vocab_size=args.vocab_size, hidden_size=args.shape["hidden_size"],
                           num_hidden_layers=args.shape["num_layers"], num_attention_heads=args.shape["num_heads"],
                           intermediate_size=args.shape["intermediate_size"], max_position_embeddings=seq,
                           attention_type="block_sparse", block_size=args.block, num_random_blocks=3,
                           hidden_act="gelu")
    model = BigBirdForMaskedLM(config)
    return model, lambda batch: model(input_ids=batch["input_ids"], attention_mask=torch.ones_like(batch["input_ids"]),
                                      labels=batch["labels"]).loss


def attention_nnz_per_layer(args, seq: int) -> list[int]:
    """Nonzero blocks (all heads) of each layer's layout at ``seq`` tokens, as the encoder builds them."""
    from bigbird_dna.attention import layout_for, num_blocks_for

    blocks = num_blocks_for(seq, args.block)
    return [layout_for("bigbird_itc", args.shape["num_heads"], blocks, args.block, layer=layer, **PATTERN).nnz
            for layer in range(args.shape["num_layers"])]


def time_training(model, loss_fn, batch: dict, args, steps: int, repeats: int) -> dict:
    """Step time (``timing.repeat_stats`` of ``repeats`` x ``steps`` synchronised steps after
    ``--warmup``), tokens/s from its median, and the peak memory of the timed steps."""
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
    warmup_s = time.perf_counter() - first
    if is_gpu(device):
        torch.cuda.reset_peak_memory_stats(device)
    samples = []
    for _ in range(repeats):
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            loss = step()
            sync(device)
            times.append((time.perf_counter() - start) * 1e3)
        samples.append(times)
    stats = repeat_stats(samples)
    tokens = batch["input_ids"].numel()
    return {"tokens_per_step": tokens, "step_ms": stats["ms"], "timing": stats,
            "tokens_per_s": tokens / stats["ms"] * 1e3,
            "tokens_per_s_by_repeat": [tokens / ms * 1e3 for ms in stats["repeat_medians_ms"]],
            "warmup_s": warmup_s, "loss": loss.item(),
            "peak_gib": torch.cuda.max_memory_allocated(device) / 2**30 if is_gpu(device) else None,
            "params_m": sum(p.numel() for p in model.parameters()) / 1e6,
            "non_embedding_params": mfu.non_embedding_params(model)}


def add_mfu(row: dict, args, device_name: str | None) -> None:
    """Model FLOPs per step, achieved model TFLOP/s and MFU of a timed row (``benchmarks/common/mfu.py``)."""
    attention = mfu.attention_flops_per_step(row["batch"], attention_nnz_per_layer(args, row["seq"]), args.block,
                                             args.shape["hidden_size"] // args.shape["num_heads"])
    flops = mfu.model_flops_per_step(row["non_embedding_params"], row["tokens_per_step"], attention)
    peak = mfu.peak_bf16_tflops(device_name) if is_gpu(args.device) else None
    row.update(attention_flops_per_step=attention, model_flops_per_step=flops,
               model_tflops=flops / row["step_ms"] / 1e9, peak_bf16_tflops=peak,
               mfu=mfu.mfu(flops, row["step_ms"] / 1e3, peak))


def run_row(payload: dict, name: str, build, batch: int, seq: int, args, role: str, memory_row: bool = False,
            **extra) -> None:
    """Time one configuration and add its row to ``payload`` (written to ``--out`` at once)."""
    row = {"method": name, "batch": batch, "seq": seq, "role": role, **extra}
    print(f"{name} {role} B={batch} T={seq} {extra}", file=sys.stderr, flush=True)
    steps, repeats = (args.memory_steps, 1) if memory_row else (args.steps, args.repeats)
    if args.budget_s is not None and time.monotonic() - args.started > args.budget_s:
        row["skipped"] = "time budget (--budget-s) spent"
    else:
        try:
            model, loss_fn = build()
            row.update(time_training(model, loss_fn, mlm_batch(batch, seq, args.vocab_size, args.device), args,
                                     steps, repeats))
            add_mfu(row, args, payload["environment"].get("device"))
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
    payload["summary"] = summarise(payload["results"])
    if args.out:  # after every row, so a run cut short keeps what it measured
        write_json(args.out, payload)


def set_kernel_variant(name: str | None) -> None:
    """Make ``name`` (a ``triton_kernels.VARIANTS`` key) the encoder's kernel options (None: keep the default)."""
    if name is None:
        return
    from bigbird_dna.attention import triton_kernels

    triton_kernels.DEFAULT_OPTIONS = triton_kernels.VARIANTS[name]


def main(argv=None) -> dict:
    args = parse_args(argv)
    args.started = time.monotonic()
    if not args.smoke and not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device: run on a GPU, or pass --smoke for the CPU check")
    env = environment(args.device)
    payload = {"benchmark": "train_throughput", "smoke": args.smoke, "commit": env["commit"], "dirty": env["dirty"],
               "git_status": env["git_status"], "environment": env, "model": args.shape,
               "vocab_size": args.vocab_size, "steps": args.steps, "repeats": args.repeats,
               "mfu_convention": MFU_CONVENTION, "command": script_command(__file__, argv), "results": [],
               "summary": {}}
    args.out = args.out or (None if args.smoke else default_out("train_throughput", env))
    variants = [None]  # off CUDA the torch backend runs: no kernel variant
    if is_gpu(args.device):
        from benchmarks.attention import default_variant_name

        variants = [variant or default_variant_name() for variant in args.variants]
    set_kernel_variant(variants[0])
    for seq in args.scaling_seq if args.tokens else []:
        batch = args.tokens // seq
        if batch:
            run_row(payload, "ours", lambda seq=seq: ours_loss(args, seq, False), batch, seq, args, "scaling",
                    variant=variants[0], checkpoint_layers=False)
    if args.tokens and not args.no_compile and args.tokens // args.scaling_seq[0]:
        seq = args.scaling_seq[0]
        run_row(payload, "ours+compile", lambda: ours_loss(args, seq, False, compiled=True), args.tokens // seq,
                seq, args, "scaling", variant=variants[0], checkpoint_layers=False,
                compile_backend=args.compile_backend)
    for variant in variants if args.batch else []:
        set_kernel_variant(variant)
        run_row(payload, "ours", lambda: ours_loss(args, args.seq, False), args.batch, args.seq, args, "vs_hf",
                variant=variant, checkpoint_layers=False)
    set_kernel_variant(variants[0])
    for seq in args.checkpoint_seq:  # short: before HF's 40 s, which reads no target
        run_row(payload, "ours", lambda seq=seq: ours_loss(args, seq, True), 1, seq, args, "memory",
                memory_row=True, variant=variants[0], checkpoint_layers=True)
    if args.batch and not args.no_hf:
        run_row(payload, "hf", lambda: hf_loss(args, args.seq), args.batch, args.seq, args, "vs_hf")
    print(markdown_table(payload["results"]) + "\n\n" + json.dumps(payload["summary"]))
    return payload


if __name__ == "__main__":
    main()
