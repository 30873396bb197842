"""Block-sparse attention speed: our Triton kernels vs FlexAttention, dense SDPA and HF BigBird.

Workload: BigBird-ITC, block 64, window 3, 3 random blocks per row, global first and last block,
per-head random pattern, bf16, H=12, D=64; T in --seq at batch --batch, then rows at batch
--tokens/T (B*T fixed: equal tokens per step, the rows that length scaling compares).

Per method and row, in one process: a correctness gate on the whole timed input (every batch row
and head), then eager forward, backward (of a retained graph) and forward+backward, then a
CUDA-graph replay of the forward+backward (the GPU time with no host in the way) and the host time
per eager forward+backward (``host_ms``: calls issued back to back, host clock). On CUDA each
timing is at least 50 calls x 3 repeats (``timing.py``): the median of the repeat medians, each
repeat's median, the spread and the IQR are recorded. Effective TFLOP/s count the nonzero-block
FLOPs (forward = nnz * 4 * b^2 * d, backward = 2.5 x forward) for every method. Methods:

- ``triton:<variant>``: ours, per ``--variants`` name (``triton_kernels.VARIANTS``; default: the
  default variant), gated against the fp32 PyTorch backend (output, dq, dk, dv). A failed gate
  is recorded, the row is not timed, and the run exits 2 after writing its file.
- ``flex``, ``flex:max-autotune`` (``--flex-modes``; ``flex:128`` on request): FlexAttention on the
  same block graph (``attention_baselines.py``), gated against ours. The max-autotune rows run
  after every other row (``--autotune-seq`` lengths at batch --batch), so a slow autotune delays
  nothing else.
- ``sdpa:<backend>`` (``--sdpa-backends``): dense SDPA; a step over 20 ms is timed whole only.
- ``hf``: HF ``BigBirdBlockSparseAttention`` at T=4096, batch --batch, identity projections.

``--key-padding-mask`` passes ours the all-True ``[B, T]`` mask the encoder always passes (the
``HAS_KPM`` kernels); the baselines run unmasked, the same attention. ``--budget-s``: optional
work (baselines, max-autotune) is skipped, with that reason, once the run is past this many seconds.
Output: a markdown table and JSON (environment, commit, dirty flag, command) in --out (default:
``benchmarks/results/<date>_<machine>/attention.json``; a smoke run writes only with --out),
rewritten after every row configuration.

    python benchmarks/attention.py              # GPU: every row
    python benchmarks/attention.py --smoke      # CPU, Triton interpreter, tiny sizes, any machine
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.attention_measure import Recorder, ensure_reference, reference_gate  # noqa: E402
from benchmarks.common.harness import environment, wall_s  # noqa: E402
from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.common.timing import MIN_ITERATIONS, MIN_REPEATS  # noqa: E402

VARIANT_NAMES = ("v0", "loop", "preload", "preload-fused", "preload-dkdv-w8", "preload-dkdv-r168",
                 "preload-fused-atomic-dq", "preload-fused-atomic-dq-w8")  # = VARIANTS


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seq", type=int, nargs="+", default=[4096, 16384, 65536], help="sequence lengths")
    parser.add_argument("--batch", type=int, default=1, help="batch of the --seq rows (default: %(default)s)")
    parser.add_argument("--tokens", type=int, default=65536,
                        help="also run batch = tokens / T for each T (0: off; default: %(default)s)")
    parser.add_argument("--tokens-methods", nargs="+", default=None, choices=["triton", "flex", "sdpa", "hf"],
                        help="methods of the --tokens rows (default: --methods)")
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--head-dim", type=int, default=64)
    parser.add_argument("--block", type=int, default=64)
    parser.add_argument("--dtype", choices=["bf16", "fp16", "fp32"], default="bf16")
    parser.add_argument("--chunk-blocks", type=int, default=None, help="our split size (default: sized per run)")
    parser.add_argument("--variants", nargs="+", default=None, choices=VARIANT_NAMES,
                        help="our kernel variants to time (default: the default variant, DEFAULT_OPTIONS)")
    parser.add_argument("--key-padding-mask", action="store_true",
                        help="pass ours the all-True padding mask the encoder passes (baselines unmasked)")
    parser.add_argument("--methods", nargs="+", default=["triton", "flex", "sdpa", "hf"],
                        choices=["triton", "flex", "sdpa", "hf"])
    parser.add_argument("--flex-modes", nargs="+", default=["default", "max-autotune"],
                        choices=["default", "max-autotune", "coarse128"])
    parser.add_argument("--autotune-seq", type=int, nargs="*", default=None,
                        help="lengths of the flex:max-autotune rows, batch --batch (default: every --seq)")
    parser.add_argument("--sdpa-backends", nargs="+", default=["flash", "cudnn", "efficient"],
                        choices=["flash", "cudnn", "efficient"])
    parser.add_argument("--iterations", type=int, default=MIN_ITERATIONS, help="timed calls per repeat (>= 50)")
    parser.add_argument("--repeats", type=int, default=MIN_REPEATS, help="repeats per timing (>= 3)")
    parser.add_argument("--no-graph", action="store_true", help="no CUDA-graph replays")
    parser.add_argument("--budget-s", type=float, default=None, help="skip optional work past this many seconds")
    add_out_argument(parser, "attention")
    parser.add_argument("--smoke", action="store_true",
                        help="CPU end-to-end check under TRITON_INTERPRET=1 (any machine): 12 blocks, 1 head, "
                             "fp32, one call per timing")
    args = parser.parse_args(argv)
    if args.iterations < MIN_ITERATIONS or args.repeats < MIN_REPEATS:
        parser.error(f"--iterations must be >= {MIN_ITERATIONS} and --repeats >= {MIN_REPEATS}")
    if args.smoke:
        args.seq, args.batch, args.tokens, args.heads, args.dtype = [12 * args.block], 1, 0, 1, "fp32"
        args.autotune_seq = None  # the smoke length
    args.tokens_methods = args.tokens_methods or args.methods
    args.autotune_seq = args.seq if args.autotune_seq is None else args.autotune_seq
    args.device = "cpu" if args.smoke else "cuda"
    return args


def default_variant_name() -> str:
    """The ``VARIANTS`` name of ``DEFAULT_OPTIONS`` (import after TRITON_INTERPRET is settled)."""
    from bigbird_dna.attention.triton_kernels import DEFAULT_OPTIONS, VARIANTS

    return next(name for name, options in VARIANTS.items() if options == DEFAULT_OPTIONS)


def bigbird_layout(heads: int, seq: int, block: int, device):
    from bigbird_dna.attention import num_blocks_for, preset

    pattern = preset("bigbird_itc", window=3, num_random=3, global_per_end=1)
    return pattern.build(heads, num_blocks_for(seq, block), block, seed=0, layer=0, device=device)


def make_recorder(batch: int, seq: int, args, graphs: list, started: float, scaling: bool) -> tuple:
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[args.dtype]
    layout = bigbird_layout(args.heads, seq, args.block, args.device)
    generator = torch.Generator(args.device).manual_seed(seq * 1000 + batch)
    shape = (batch, args.heads, seq, args.head_dim)
    q, k, v = (torch.randn(shape, device=args.device, dtype=dtype, generator=generator).requires_grad_()
               for _ in range(3))
    grad_out = torch.randn(shape, device=args.device, dtype=dtype, generator=generator)
    mask = torch.ones(batch, seq, device=args.device, dtype=torch.bool) if args.key_padding_mask else None
    fwd_flop = batch * layout.nnz * 4 * args.block**2 * args.head_dim
    base = {"batch": batch, "seq": seq, "tokens": batch * seq, "equal_tokens_row": scaling, "heads": args.heads,
            "head_dim": args.head_dim, "dtype": args.dtype, "block": args.block, "nnz_blocks": layout.nnz,
            "fwd_gflop": fwd_flop / 1e9, "key_padding_mask": args.key_padding_mask}
    return Recorder(base, (q, k, v), grad_out, fwd_flop, args, graphs, started), layout, mask


def run_ours(rec: Recorder, layout, mask, args) -> None:
    from bigbird_dna.attention.triton_kernels import triton_block_sparse_attention

    for variant in args.variants:
        def attn(q, k, v, kw={"options": variant, "chunk_blocks": args.chunk_blocks}):  # noqa: B006
            return triton_block_sparse_attention(q, k, v, layout, mask, **kw)
        first_s = wall_s(lambda: attn(*rec.inputs).backward(rec.grad_out), rec.inputs[0].device)
        for x in rec.inputs:
            x.grad = None
        if not ensure_reference(rec, layout, mask):
            gate = {"against": "fp32 PyTorch backend", "rel_err": {}, "limit": None, "passed": False,
                    "error": "the fp32 reference ran out of memory"}
        else:
            gate, ours = reference_gate(attn, *rec.inputs, rec.grad_out, rec.reference)
            if rec.ours is None and gate["passed"]:
                rec.ours, rec.ours_name = ours, f"triton:{variant}"
            del ours
        rec.measure(f"triton:{variant}", attn, gate=gate, graph=True, variant=variant, first_call_s=first_s)


def run_config(batch: int, seq: int, args, methods, graphs: list, started: float, scaling: bool = False) -> Recorder:
    """Every method of ``methods`` at (batch, seq), except the deferred max-autotune Flex rows."""
    from benchmarks.common.attention_baselines import FLEX_MODES, run_flex, run_hf, run_sdpa

    rec, layout, mask = make_recorder(batch, seq, args, graphs, started, scaling)
    rec.layout = layout
    print(f"B={batch} T={seq} mask={args.key_padding_mask}", file=sys.stderr, flush=True)
    rec.mask = mask
    if "triton" in methods:
        run_ours(rec, layout, mask, args)
    dense_gflop = batch * args.heads * 4 * seq * seq * args.head_dim / 1e9
    for method in ("flex", "sdpa", "hf"):
        if method not in methods:
            continue
        modes = [m for m in args.flex_modes if m != "max-autotune"] if method == "flex" else [None]
        for mode in modes:
            if rec.over_budget():
                rec.skip(FLEX_MODES[mode][0] if mode else method, "time budget (--budget-s) spent")
                continue
            try:
                if method == "flex":
                    run_flex(rec, layout, seq, mode, *flex_reference(rec))
                elif method == "sdpa":
                    run_sdpa(rec, args.device, dense_gflop, args.sdpa_backends)
                else:
                    run_hf(rec, args, batch, seq, args.device, rec.inputs[0].dtype)
            except Exception as err:  # noqa: BLE001 - a broken baseline is reported, not fatal
                rec.skip(method, f"failed: {type(err).__name__}: {err}"[:300])
    return rec


def flex_reference(rec: Recorder) -> tuple:
    """What Flex is gated against: ours when ours passed its gate, else the fp32 reference."""
    if rec.ours is not None:
        return rec.ours, rec.ours_name
    if not ensure_reference(rec, rec.layout, rec.mask):
        raise RuntimeError("no reference to gate against: the fp32 reference ran out of memory")
    return rec.reference, "fp32 PyTorch backend"


def run_autotune(rec: Recorder, args) -> None:
    """The deferred ``flex:max-autotune`` row of ``rec``'s configuration."""
    from benchmarks.common.attention_baselines import run_flex

    print(f"B={rec.base['batch']} T={rec.base['seq']} flex:max-autotune", file=sys.stderr, flush=True)
    if rec.over_budget():
        return rec.skip("flex:max-autotune", "time budget (--budget-s) spent")
    try:
        want = flex_reference(rec)
    except RuntimeError as err:
        return rec.skip("flex:max-autotune", str(err))
    run_flex(rec, rec.layout, rec.base["seq"], "max-autotune", *want)
    return None


def markdown_table(rows: list[dict]) -> str:
    """One line per (config, method): medians, spread of fwd+bwd across repeats, graph replay, host
    time per call."""
    lines = [("| B | T | mask | method | fwd ms | bwd ms | fwd+bwd ms | spread % | graph ms | host ms | fwd TFLOP/s "
              "| bwd TFLOP/s | peak MiB | gate max rel err |"), "|" + "---|" * 14]
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    for r in rows:
        lead = f"| {r['batch']} | {r['seq']} | {'yes' if r['key_padding_mask'] else 'no'} | {r['method']} "
        gate = r.get("gate")
        gate_err = fmt(max(gate["rel_err"].values(), default=None), ".1e") if isinstance(gate, dict) else "-"
        if "skipped" in r or "failed" in r:
            lines.append(f"{lead}| {'failed' if 'failed' in r else 'skipped'}: {r.get('failed') or r['skipped']} "
                         f"||||||||| {gate_err} |")
            continue
        spread = r["timing"].get("fwd_bwd", {}).get("spread_pct")
        lines.append(f"{lead}| {fmt(r['fwd_ms'], '.3f')} | {fmt(r['bwd_ms'], '.3f')} | {r['fwd_bwd_ms']:.3f} "
                     f"| {fmt(spread, '.1f')} | {fmt(r.get('graph_fwd_bwd_ms'), '.3f')} "
                     f"| {fmt(r.get('host_ms'), '.3f')} | {fmt(r.get('fwd_tflops'), '.1f')} "
                     f"| {fmt(r.get('bwd_tflops'), '.1f')} | {fmt(r['peak_mib'], '.0f')} | {gate_err} |")
    return "\n".join(lines)


def main(argv=None) -> dict:
    args = parse_args(argv)
    started = time.monotonic()
    if args.smoke:
        os.environ["TRITON_INTERPRET"] = "1"  # before any Triton kernel is defined
    elif not torch.cuda.is_available():
        raise SystemExit("error: no CUDA device: run on a GPU, or pass --smoke for the CPU interpreter check")
    args.variants = args.variants or [default_variant_name()]
    # (batch, seq, equal_tokens_row): the --seq rows, then batch = tokens / T where that is another row
    configs = [(args.batch, t, args.batch * t == args.tokens) for t in args.seq]
    if args.tokens:
        configs += [(args.tokens // t, t, True) for t in args.seq if args.tokens // t not in (0, args.batch)]
    env = environment(args.device)
    payload = {"benchmark": "attention", "commit": env["commit"], "dirty": env["dirty"],
               "git_status": env["git_status"], "environment": env, "default_variant": default_variant_name(),
               "args": {k: str(v) for k, v in vars(args).items()}, "command": script_command(__file__, argv),
               "results": []}
    out = args.out or (None if args.smoke else default_out("attention", env))
    graphs: list = []  # every captured graph stays alive to the end of the run
    deferred = []

    def write():
        if out:  # after every configuration, so a run cut short keeps what it measured
            write_json(out, payload)
    for batch, seq, scaling in configs:
        methods = args.methods if batch == args.batch else args.tokens_methods
        rec = run_config(batch, seq, args, methods, graphs, started, scaling)
        payload["results"] += rec.rows
        write()
        if "flex" in methods and "max-autotune" in args.flex_modes and batch == args.batch and seq in args.autotune_seq:
            deferred.append(rec)
    for rec in deferred:
        before = len(rec.rows)
        run_autotune(rec, args)
        payload["results"] += rec.rows[before:]
        write()
    print(markdown_table(payload["results"]) + "\n\nTFLOP/s: nonzero-block FLOPs (fwd = nnz*4*b^2*d, bwd = 2.5x) "
          "for every method, dense SDPA included; medians of 3 repeats of 50 calls on CUDA")
    failed = [r["method"] + f" B={r['batch']} T={r['seq']}" for r in payload["results"]
              if r["method"].startswith("triton") and "failed" in r]
    if failed:
        print(f"error: our kernels failed the correctness gate: {', '.join(failed)}", file=sys.stderr)
        raise SystemExit(2)
    return payload


if __name__ == "__main__":
    main()
