"""Block-sparse attention speed: our Triton kernels vs FlexAttention, dense SDPA and HF BigBird.

Workload: BigBird-ITC, block 64, window 3, 3 random blocks
per row, global first and last block, per-head random pattern, bf16, H=12, D=64; T in --seq at
batch --batch, plus rows at batch --tokens/T (B*T fixed). For every row and method: forward,
backward and forward+backward time (``triton.testing.do_bench`` median, L2 flushed), effective
TFLOP/s on the nonzero-block FLOPs (forward = nnz * 4 * b^2 * d, backward = 2.5 x forward) and the
peak memory of one forward+backward above the inputs. Baselines, measured in the same run:

- ``triton:<variant>``: ours, once per ``--variants`` name (``KernelOptions`` in
  ``bigbird_dna.attention.triton_kernels.VARIANTS``: index loaded in the loop or preloaded, dK/dV
  warps or register cap, the original "v0"), timed side by side in the same run.
- ``flex``, ``flex:128``: ``torch.compile(flex_attention, dynamic=False)`` with a BlockMask built
  once by ``BlockMask.from_kv_blocks``: ``flex`` on the layout's 64-token blocks, all full, no
  mask_mod, 64-wide tiles forced (Flex's sm_90 tiles for d=64 are 128 wide); ``flex:128`` on
  128-token blocks, partial ones resolved by a mask_mod, with the tiles Flex picks. Compile and
  mask-build times are reported separately, not in the timings.
- ``sdpa:<backend>``: dense ``scaled_dot_product_attention`` for each backend that runs (flash,
  cudnn, efficient); the backend is part of the name.
- ``hf``: HF transformers ``BigBirdBlockSparseAttention`` at T=4096 only, its q/k/v projections
  replaced by identities so that only attention is timed (q = k = v; its own random plan).

``--key-padding-mask`` passes ours the all-True ``[B, T]`` mask that the encoder always passes
(full windows): that path compiles differently (``HAS_KPM``). The baselines then run unmasked,
which is the same attention.

Before timing, a correctness gate compares each variant of ours (outputs and gradients, 2 heads of
batch 0) with the PyTorch backend in fp32, and Flex's outputs with ours on the same layout. Output:
a markdown table on stdout and JSON (device, versions, clocks and power from nvidia-smi, date,
commit) in --out.

    python benchmarks/attention.py --out benchmarks/results/attention_h100.json
    python benchmarks/attention.py --smoke      # CPU, Triton interpreter, tiny sizes, any machine
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.harness import bench_ms, environment, is_gpu, peak_mib, relative_error, wall_s  # noqa: E402

VARIANT_NAMES = ("v0", "loop", "preload", "preload-fused", "preload-dkdv-w8", "preload-dkdv-r168")  # = VARIANTS


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384, 65536], help="sequence lengths")
    parser.add_argument("--batch", type=int, default=1, help="batch of the --seq rows (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=65536,
                        help="also run batch = tokens / T for each T (0: off; default: %(default)s)")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    parser.add_argument("--chunk-blocks", type=int, default=None, help="our split size (default: sized per run)")
    parser.add_argument("--variants", nargs="+", default=None, choices=VARIANT_NAMES,
                        help="our kernel variants to time (default: all; smoke: loop preload)")
    parser.add_argument("--key-padding-mask", action="store_true",
                        help="pass ours the all-True padding mask the encoder passes (baselines unmasked)")
    parser.add_argument("--methods", nargs="+", default=["triton", "flex", "sdpa", "hf"],
                        choices=["triton", "flex", "sdpa", "hf"])
    parser.add_argument("--warmup", type=float, default=25, help="do_bench warm-up in ms, at least 25 runs")
    parser.add_argument("--rep", type=float, default=100, help="do_bench timing in ms, at least 100 runs")
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU end-to-end check under TRITON_INTERPRET=1 (any machine): 12 blocks, 1 head, "
                             "fp32, one call per timing")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seq, args.batch, args.tokens, args.heads, args.dtype = [12 * args.block], 1, 0, 1, "fp32"
    args.variants = args.variants or (["loop", "preload"] if args.smoke else list(VARIANT_NAMES))
    args.device = "cpu" if args.smoke else "cuda"
    return args


# --- workload --------------------------------------------------------------------------------------

def bigbird_layout(heads: int, seq: int, block: int, device):
    from bigbird_dna.attention import num_blocks_for, preset

    pattern = preset("bigbird_itc", window=3, num_random=3, global_per_end=1)
    return pattern.build(heads, num_blocks_for(seq, block), block, seed=0, layer=0, device=device)


def head_prefix(layout, heads: int):
    """The layout of the first ``heads`` heads (CSR tables are flattened head-major)."""
    from bigbird_dna.attention import BlockLayout

    nq, nk = layout.num_q_blocks, layout.num_k_blocks
    kv_ptr, q_ptr = layout.kv_ptr[: heads * nq + 1], layout.q_ptr[: heads * nk + 1]
    return BlockLayout(layout.block_size, heads, nq, nk, kv_ptr, layout.kv_idx[: int(kv_ptr[-1])],
                       q_ptr, layout.q_idx[: int(q_ptr[-1])])


# --- timing ----------------------------------------------------------------------------------------

def measure(attn, q, k, v, args) -> dict:
    """Forward, backward and forward+backward ms and peak MiB of ``attn(q, k, v)``.

    Off CUDA (smoke) one call each, and forward+backward is their sum.
    """
    grad_out = torch.randn_like(q)
    leaves = [q, k, v]
    timing = {"device": q.device, "warmup_ms": args.warmup, "rep_ms": args.rep, "grad_to_none": leaves}
    fwd_ms = bench_ms(lambda: attn(q, k, v), **timing)
    out = attn(q, k, v)
    bwd_ms = bench_ms(lambda: out.backward(grad_out, retain_graph=True), **timing)
    out = None  # free the graph
    if not is_gpu(q.device):
        return {"fwd_ms": fwd_ms, "bwd_ms": bwd_ms, "fwd_bwd_ms": fwd_ms + bwd_ms, "peak_mib": None}
    step_ms = bench_ms(lambda: attn(q, k, v).backward(grad_out), **timing)
    for x in leaves:
        x.grad = None
    peak = peak_mib(lambda: attn(q, k, v).backward(grad_out), q.device)
    return {"fwd_ms": fwd_ms, "bwd_ms": bwd_ms, "fwd_bwd_ms": step_ms, "peak_mib": peak}


def first_call_s(attn, q, k, v) -> float | None:
    """Seconds of the first forward+backward (JIT compilation, plan building); not timed off CUDA."""
    return wall_s(lambda: attn(q, k, v).backward(torch.ones_like(q)), q.device) if is_gpu(q.device) else None


# --- methods ---------------------------------------------------------------------------------------

class Recorder:
    """Collects one result row per method for a (batch, seq) configuration."""

    def __init__(self, base: dict, inputs, fwd_flop: float, args):
        self.base, self.inputs, self.fwd_flop, self.args = base, inputs, fwd_flop, args
        self.rows: list[dict] = []

    def measure(self, method: str, attn, **extra) -> None:
        row = dict(self.base, method=method, **extra)
        try:
            row.update(measure(attn, *self.inputs, self.args))
            row["fwd_tflops"] = self.fwd_flop / row["fwd_ms"] / 1e9
            row["bwd_tflops"] = 2.5 * self.fwd_flop / row["bwd_ms"] / 1e9
        except torch.OutOfMemoryError:
            row["skipped"] = "out of memory"
            torch.cuda.empty_cache()
        self.rows.append(row)
        print(f"  {method}: {row.get('fwd_bwd_ms', row.get('skipped'))}", file=sys.stderr, flush=True)

    def skip(self, method: str, reason: str) -> None:
        self.rows.append(dict(self.base, method=method, skipped=reason))
        print(f"  {method}: skipped ({reason})", file=sys.stderr, flush=True)


def correctness_gate(layout, q, k, v, mask, kw) -> dict:
    """Relative errors of ours vs the fp32 PyTorch backend on batch 0, first two heads."""
    from bigbird_dna.attention import torch_block_sparse_attention
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    small = head_prefix(layout, min(2, layout.num_heads))
    q0, k0, v0 = (x[:1, : small.num_heads].detach().requires_grad_() for x in (q, k, v))
    mask0 = None if mask is None else mask[:1]
    grad_out = torch.randn_like(q0)
    out = triton_block_sparse_attention(q0, k0, v0, small, mask0, **kw)
    got = [out, *torch.autograd.grad(out, (q0, k0, v0), grad_out)]
    ref_in = [x.detach().float().requires_grad_() for x in (q0, k0, v0)]
    ref = torch_block_sparse_attention(*ref_in, small, mask0)
    want = [ref, *torch.autograd.grad(ref, ref_in, grad_out.float())]
    return {name: relative_error(a, b) for name, a, b in zip(("out", "dq", "dk", "dv"), got, want)}


def run_config(batch: int, seq: int, args) -> list[dict]:
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    device = args.device
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    layout = bigbird_layout(args.heads, seq, args.block, device)
    shape = (batch, args.heads, seq, args.head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.ones(batch, seq, device=device, dtype=torch.bool) if args.key_padding_mask else None
    fwd_flop = batch * layout.nnz * 4 * args.block**2 * args.head_dim
    base = {"batch": batch, "seq": seq, "heads": args.heads, "head_dim": args.head_dim, "dtype": args.dtype,
            "block": args.block, "nnz_blocks": layout.nnz, "fwd_gflop": fwd_flop / 1e9,
            "key_padding_mask": args.key_padding_mask}
    rec = Recorder(base, (q, k, v), fwd_flop, args)
    print(f"B={batch} T={seq} mask={args.key_padding_mask}", file=sys.stderr, flush=True)

    ours = None
    for variant in args.variants if "triton" in args.methods else []:
        kw = {"options": variant, "chunk_blocks": args.chunk_blocks}
        gate = correctness_gate(layout, q, k, v, mask, kw)
        if max(gate.values()) > (1e-4 if dtype == torch.float32 else 2e-2):
            raise SystemExit(f"correctness gate failed for {variant} at B={batch} T={seq}: relative errors {gate}")

        def attn(q, k, v, kw=kw):
            return triton_block_sparse_attention(q, k, v, layout, mask, **kw)
        ours = ours or attn
        rec.measure(f"triton:{variant}", attn, first_call_s=first_call_s(attn, q, k, v), gate_rel_err=gate)
    from benchmarks.attention_baselines import run_flex, run_hf, run_sdpa

    baselines = {
        "flex": lambda: run_flex(rec, layout, (q, k, v), seq, ours),
        "sdpa": lambda: run_sdpa(rec, device, dense_fwd_gflop=batch * args.heads * 4 * seq * seq * args.head_dim / 1e9),
        "hf": lambda: run_hf(rec, args, batch, seq, device, dtype),
    }
    for method, run in baselines.items():
        if method in args.methods:
            try:
                run()
            except Exception as err:  # noqa: BLE001 - a broken baseline is reported, not fatal
                rec.skip(method, f"failed: {type(err).__name__}: {err}"[:300])
    return rec.rows


# --- report ----------------------------------------------------------------------------------------

def markdown_table(rows: list[dict]) -> str:
    """One line per (config, method); the last column is its fwd+bwd time over our best variant's."""
    lines = ["| B | T | mask | method | fwd ms | bwd ms | fwd+bwd ms | fwd TFLOP/s | bwd TFLOP/s | peak MiB "
             "| / best ours |", "|" + "---|" * 11]
    best: dict = {}
    for r in rows:
        if r["method"].startswith("triton") and "fwd_bwd_ms" in r:
            key = (r["batch"], r["seq"], r["key_padding_mask"])
            best[key] = min(best.get(key, float("inf")), r["fwd_bwd_ms"])
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    for r in rows:
        lead = f"| {r['batch']} | {r['seq']} | {'yes' if r['key_padding_mask'] else 'no'} | {r['method']} "
        if "skipped" in r:
            lines.append(f"{lead}| skipped: {r['skipped']} |||||||")
            continue
        mine = best.get((r["batch"], r["seq"], r["key_padding_mask"]))
        ratio = None if mine is None else r["fwd_bwd_ms"] / mine
        lines.append(f"{lead}| {r['fwd_ms']:.3f} | {r['bwd_ms']:.3f} | {r['fwd_bwd_ms']:.3f} "
                     f"| {r['fwd_tflops']:.1f} | {r['bwd_tflops']:.1f} | {fmt(r['peak_mib'], '.0f')} "
                     f"| {fmt(ratio, '.2f')} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = parse_args(argv)
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before any Triton kernel is defined
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU, or pass --smoke for the CPU interpreter check")
    configs = [(args.batch, t) for t in args.seq]
    if args.tokens:
        configs += [(args.tokens // t, t) for t in args.seq if args.tokens // t not in (0, args.batch)]
    payload = {"benchmark": "attention", "environment": environment(args.device),
               "args": {k: str(v) for k, v in vars(args).items()}, "results": []}
    for batch, seq in configs:
        payload["results"] += run_config(batch, seq, args)
        if args.out:  # after every configuration, so a run cut short keeps what it measured
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(payload, indent=2, default=str))
    flops_note = "TFLOP/s: nonzero-block FLOPs (fwd = nnz*4*b^2*d, bwd = 2.5x) for every method, dense SDPA included"
    print(markdown_table(payload["results"]) + "\n\n" + flops_note)
    return payload


if __name__ == "__main__":
    main()
