"""Block-sparse attention speed: our Triton kernels vs FlexAttention, dense SDPA and HF BigBird.

Workload (shared/reference/perf_anchors.md §5): BigBird-ITC, block 64, window 3, 3 random blocks
per row, global first and last block, per-head random pattern, bf16, H=12, D=64; T in --seq at
batch --batch, plus rows at batch --tokens/T (B*T fixed). For every row and method: forward,
backward and forward+backward time (``triton.testing.do_bench`` median, L2 flushed), effective
TFLOP/s on the nonzero-block FLOPs (forward = nnz * 4 * b^2 * d, backward = 2.5 x forward) and the
peak memory of one forward+backward above the inputs. Baselines, measured in the same run:

- ``flex``: ``torch.compile(flex_attention, dynamic=False)`` with a BlockMask built once by
  ``BlockMask.from_kv_blocks`` (BLOCK_SIZE=64, every block passed as full, no mask_mod); compile and
  mask-build times are reported separately, not in the timings.
- ``sdpa:<backend>``: dense ``scaled_dot_product_attention`` for each backend that runs (flash,
  cudnn, efficient); the backend is part of the name.
- ``hf``: HF transformers ``BigBirdBlockSparseAttention`` at T=4096 only, its q/k/v projections
  replaced by identities so that only attention is timed (q = k = v; its own random plan).

Before timing, a correctness gate compares ours (outputs and gradients, 2 heads of batch 0) with
the PyTorch backend in fp32, and Flex's outputs with ours on the same layout. Output: a markdown
table on stdout and JSON (device, versions, clocks and power from nvidia-smi, date) in --out.

    python benchmarks/attention.py --out benchmarks/results/attention_h100.json
    python benchmarks/attention.py --smoke      # CPU, Triton interpreter, tiny sizes
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


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
    parser.add_argument("--chunk-blocks", type=int, default=None, help="our split size (default: the kernel's)")
    parser.add_argument("--methods", nargs="+", default=["triton", "flex", "sdpa", "hf"],
                        choices=["triton", "flex", "sdpa", "hf"])
    parser.add_argument("--warmup", type=float, default=25, help="do_bench warm-up in ms, at least 25 runs")
    parser.add_argument("--rep", type=float, default=100, help="do_bench timing in ms, at least 100 runs")
    parser.add_argument("--out", type=Path, default=None, help="JSON results file")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU end-to-end check under TRITON_INTERPRET=1: T=768, H=2, fp32, one call each")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seq, args.batch, args.tokens, args.heads, args.dtype = [768], 1, 0, 2, "fp32"
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


def flex_block_mask(layout, seq: int):
    """FlexAttention BlockMask with the layout's blocks, all full, indices padded to nb ([1, H, nq, nb])."""
    from torch.nn.attention.flex_attention import BlockMask

    H, nq, nk = layout.num_heads, layout.num_q_blocks, layout.num_k_blocks
    lengths = (layout.kv_ptr[1:] - layout.kv_ptr[:-1]).long()
    slot = torch.arange(nk, device=lengths.device)
    pos = (layout.kv_ptr[:-1].long()[:, None] + slot).clamp(max=layout.nnz - 1)
    indices = torch.where(slot < lengths[:, None], layout.kv_idx[pos], 0).to(torch.int32)
    zeros = torch.zeros(1, H, nq, dtype=torch.int32, device=lengths.device)
    return BlockMask.from_kv_blocks(zeros, torch.zeros_like(indices).view(1, H, nq, nk),
                                    lengths.to(torch.int32).view(1, H, nq), indices.view(1, H, nq, nk),
                                    BLOCK_SIZE=layout.block_size, seq_lengths=(seq, seq))


# --- timing ----------------------------------------------------------------------------------------

def cuda_sync():
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def bench_ms(fn, args, grad_to_none) -> float:
    """Median ms of ``fn``: do_bench (L2 flushed) with at least 25 warm-up and 100 timed runs.

    In smoke mode (CPU) a single timed call.
    """
    if not torch.cuda.is_available():
        start = time.perf_counter()
        fn()
        return (time.perf_counter() - start) * 1e3
    import triton.testing

    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    estimate = start.elapsed_time(end)
    return triton.testing.do_bench(fn, warmup=max(args.warmup, 25 * estimate), rep=max(args.rep, 100 * estimate),
                                   grad_to_none=grad_to_none, return_mode="median")


def measure(attn, q, k, v, args) -> dict:
    """Forward, backward and forward+backward times and peak memory of ``attn(q, k, v)``."""
    grad_out = torch.randn_like(q)
    leaves = [q, k, v]
    fwd_ms = bench_ms(lambda: attn(q, k, v), args, leaves)
    out = attn(q, k, v)
    bwd_ms = bench_ms(lambda: out.backward(grad_out, retain_graph=True), args, leaves)
    del out
    step_ms = bench_ms(lambda: attn(q, k, v).backward(grad_out), args, leaves)
    peak_mib = None
    if torch.cuda.is_available():
        for x in leaves:
            x.grad = None
        cuda_sync()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        attn(q, k, v).backward(grad_out)
        cuda_sync()
        peak_mib = (torch.cuda.max_memory_allocated() - base) / 2**20
    return {"fwd_ms": fwd_ms, "bwd_ms": bwd_ms, "fwd_bwd_ms": step_ms, "peak_mib": peak_mib}


def first_call_s(attn, q, k, v) -> float:
    """Seconds of the first forward+backward (JIT compilation, plan building)."""
    cuda_sync()
    start = time.perf_counter()
    attn(q, k, v).backward(torch.ones_like(q))
    cuda_sync()
    return time.perf_counter() - start


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12)).item()


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


def correctness_gate(layout, q, k, v, kw) -> dict:
    """Relative errors of ours vs the fp32 PyTorch backend on batch 0, first two heads."""
    from bigbird_dna.attention import torch_block_sparse_attention
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    small = head_prefix(layout, min(2, layout.num_heads))
    q0, k0, v0 = (x[:1, : small.num_heads].detach().requires_grad_() for x in (q, k, v))
    grad_out = torch.randn_like(q0)
    out = triton_block_sparse_attention(q0, k0, v0, small, **kw)
    got = [out, *torch.autograd.grad(out, (q0, k0, v0), grad_out)]
    ref_in = [x.detach().float().requires_grad_() for x in (q0, k0, v0)]
    ref = torch_block_sparse_attention(*ref_in, small)
    want = [ref, *torch.autograd.grad(ref, ref_in, grad_out.float())]
    return {name: relative_error(a, b) for name, a, b in zip(("out", "dq", "dk", "dv"), got, want)}


def run_config(batch: int, seq: int, args, device) -> list[dict]:
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    layout = bigbird_layout(args.heads, seq, args.block, device)
    shape = (batch, args.heads, seq, args.head_dim)
    q, k, v = (torch.randn(shape, device=device, dtype=dtype, requires_grad=True) for _ in range(3))
    kw = {} if args.chunk_blocks is None else {"chunk_blocks": args.chunk_blocks}
    fwd_flop = batch * layout.nnz * 4 * args.block**2 * args.head_dim
    base = {"batch": batch, "seq": seq, "heads": args.heads, "head_dim": args.head_dim, "dtype": args.dtype,
            "block": args.block, "nnz_blocks": layout.nnz, "fwd_gflop": fwd_flop / 1e9}
    rec = Recorder(base, (q, k, v), fwd_flop, args)
    print(f"B={batch} T={seq}", file=sys.stderr, flush=True)

    gate = correctness_gate(layout, q, k, v, kw)
    if max(gate.values()) > (1e-4 if dtype == torch.float32 else 2e-2):
        raise SystemExit(f"correctness gate failed at B={batch} T={seq}: relative errors {gate}")
    ours = lambda q, k, v: triton_block_sparse_attention(q, k, v, layout, **kw)  # noqa: E731
    if "triton" in args.methods:
        rec.measure("triton", ours, first_call_s=first_call_s(ours, q, k, v), gate_rel_err=gate)
    baselines = {
        "flex": lambda: run_flex(rec, layout, (q, k, v), seq, ours),
        "sdpa": lambda: run_sdpa(rec, dense_fwd_gflop=batch * args.heads * 4 * seq * seq * args.head_dim / 1e9),
        "hf": lambda: run_hf(rec, args, batch, seq, device, dtype),
    }
    for method, run in baselines.items():
        if method in args.methods:
            try:
                run()
            except Exception as err:  # noqa: BLE001 - a broken baseline is reported, not fatal
                rec.skip(method, f"failed: {type(err).__name__}: {err}"[:300])
    return rec.rows


def run_flex(rec: Recorder, layout, inputs, seq: int, ours) -> None:
    if not torch.cuda.is_available():
        return rec.skip("flex", "needs CUDA (torch.compile'd FlexAttention)")
    from torch.nn.attention.flex_attention import flex_attention

    cuda_sync()
    start = time.perf_counter()
    block_mask = flex_block_mask(layout, seq)
    cuda_sync()
    build_s = time.perf_counter() - start
    mask_mib = sum(t.numel() * t.element_size() for t in block_mask.as_tuple() if torch.is_tensor(t)) / 2**20
    flex = torch.compile(flex_attention, dynamic=False)
    attn = lambda q, k, v: flex(q, k, v, block_mask=block_mask)  # noqa: E731
    compile_s = first_call_s(attn, *inputs)
    with torch.no_grad():
        agree = relative_error(attn(*inputs), ours(*inputs))
    if agree > 2e-2:
        raise SystemExit(f"FlexAttention and ours disagree (relative error {agree:.2e}): the BlockMask differs")
    rec.measure("flex", attn, mask_build_s=build_s, mask_mib=mask_mib, first_call_s=compile_s,
                rel_err_vs_ours=agree)


def run_sdpa(rec: Recorder, dense_fwd_gflop: float) -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}
    for name in ["flash", "cudnn", "efficient"] if torch.cuda.is_available() else ["math"]:
        def attn(q, k, v, backend=backends[name]):
            with sdpa_kernel([backend]):
                return scaled_dot_product_attention(q, k, v)
        try:
            rec.measure(f"sdpa:{name}", attn, dense_fwd_gflop=dense_fwd_gflop)
        except RuntimeError as err:  # backend unavailable for this device, dtype or shape
            rec.skip(f"sdpa:{name}", str(err).splitlines()[0][:200])


def run_hf(rec: Recorder, args, batch: int, seq: int, device, dtype) -> None:
    if seq != 4096:
        return rec.skip("hf", "run at T=4096 only")
    if not torch.cuda.is_available():
        return rec.skip("hf", "GPU only")
    try:
        from transformers import BigBirdConfig
        from transformers.models.big_bird.modeling_big_bird import (
            BigBirdBlockSparseAttention,
            BigBirdModel,
        )
    except ImportError as err:
        return rec.skip("hf", f"transformers not importable: {err}")
    config = BigBirdConfig(hidden_size=args.heads * args.head_dim, num_attention_heads=args.heads,
                           attention_type="block_sparse", block_size=args.block, num_random_blocks=3,
                           max_position_embeddings=seq)
    module = BigBirdBlockSparseAttention(config, seed=0).to(device, dtype).train()
    module.query = module.key = module.value = torch.nn.Identity()  # time attention only
    blocked, band, from_mask, to_mask = BigBirdModel.create_masks_for_block_sparse_attn(
        torch.ones(batch, seq, device=device, dtype=dtype), args.block)
    masks = dict(band_mask=band, from_mask=from_mask, to_mask=to_mask, from_blocked_mask=blocked,
                 to_blocked_mask=blocked)

    def attn(q, k, v):  # q = k = v, as [B, T, H*D] hidden states
        hidden = q.transpose(1, 2).reshape(batch, seq, -1)
        out = module(hidden, **masks)[0]
        return out.view(batch, seq, args.heads, args.head_dim).transpose(1, 2)
    rec.measure("hf", attn)
    return None


# --- report ----------------------------------------------------------------------------------------

def environment() -> dict:
    import triton

    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "torch": torch.__version__, "triton": triton.__version__, "cuda": torch.version.cuda,
           "python": platform.python_version(), "host": platform.node(),
           "interpreter": os.environ.get("TRITON_INTERPRET") == "1"}
    if torch.cuda.is_available():
        env["device"] = torch.cuda.get_device_name()
        env["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
        env["sdpa_cudnn_enabled"] = torch.backends.cuda.cudnn_sdp_enabled()
        for key, cmd in {"nvidia_smi_gpu": ["nvidia-smi", "--format=csv", "--query-gpu=name,power.limit,"
                                            "power.draw,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu"],
                         "nvidia_smi_q": ["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE"]}.items():
            try:
                env[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout[:12000]
            except (OSError, subprocess.SubprocessError) as err:
                env[key] = f"unavailable: {err}"
    else:
        env["device"] = f"cpu ({platform.processor() or platform.machine()})"
    return env


def markdown_table(rows: list[dict]) -> str:
    lines = ["| B | T | method | fwd ms | bwd ms | fwd+bwd ms | fwd TFLOP/s | bwd TFLOP/s | peak MiB "
             "| ours faster (fwd+bwd) |", "|" + "---|" * 10]
    ours = {(r["batch"], r["seq"]): r for r in rows if r["method"] == "triton" and "fwd_bwd_ms" in r}
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    for r in rows:
        if "skipped" in r:
            lines.append(f"| {r['batch']} | {r['seq']} | {r['method']} | skipped: {r['skipped']} |||||||")
            continue
        mine = ours.get((r["batch"], r["seq"]))
        ratio = None if mine is None else r["fwd_bwd_ms"] / mine["fwd_bwd_ms"]
        lines.append(f"| {r['batch']} | {r['seq']} | {r['method']} | {r['fwd_ms']:.3f} | {r['bwd_ms']:.3f} "
                     f"| {r['fwd_bwd_ms']:.3f} | {r['fwd_tflops']:.1f} | {r['bwd_tflops']:.1f} "
                     f"| {fmt(r['peak_mib'], '.0f')} | {fmt(ratio, '.2f')} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(argv)
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before any Triton kernel is defined
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device: run on a GPU, or pass --smoke for the CPU interpreter check")
    device = "cuda" if torch.cuda.is_available() and not args.smoke else "cpu"
    configs = [(args.batch, t) for t in args.seq]
    if args.tokens:
        configs += [(args.tokens // t, t) for t in args.seq if args.tokens // t not in (0, args.batch)]
    rows = [row for batch, seq in configs for row in run_config(batch, seq, args, device)]
    flops_note = "TFLOP/s: nonzero-block FLOPs (fwd = nnz*4*b^2*d, bwd = 2.5x) for every method, dense SDPA included"
    print(markdown_table(rows) + "\n\n" + flops_note)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        payload = {"environment": environment(), "args": {k: str(v) for k, v in vars(args).items()},
                   "results": rows}
        args.out.write_text(json.dumps(payload, indent=2))
        print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
