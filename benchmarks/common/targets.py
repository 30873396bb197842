"""The issue's targets, each judged met / not met / not measured from the suite's result files alone.

:func:`target_table` reads the parsed JSON of the steps of one suite call (``{step name: data or
None}``) and returns one line per target: ``target``, ``threshold``, ``measured`` (None when not
measured), ``status`` and ``detail`` (which rows, or why nothing was measured). Each target reads
the first present file of its :data:`SOURCES` (ours and its baseline always from one file, one run):
the default call's ``attention`` (ours and Flex), ``train`` (4K) and ``promoter_scan``; the
``--extra`` call's ``attention_dense`` (cuDNN and HF); ``attention_more`` (Flex max-autotune) and
``train_all`` (every training row) where a call ran them.

Rows a target reads, always the same ones (never the best of several tries):

- attention: batch 1, no padding mask, the default variant of ours (``default_variant`` in the
  file) and a baseline timed in the same file; a row that failed its correctness gate or was
  skipped counts as not measured. Flex: the faster of the gated Flex rows (default compile,
  max-autotune). Ratios are eager forward+backward medians, baseline over ours.
- training: the equal-tokens-per-step rows (``role`` "scaling"): MFU of the 4K row (eager
  ``ours`` or ``ours+compile``, two settings each timed once: the better one, named in the
  detail), tokens/s of the eager 16K and 64K rows over the eager 4K row with the same tokens
  per step.
- promoter scan: end-to-end Gbp/min with both strands scored.

Results of a smoke or dry run (not on a GPU) are never measurements.
"""
from __future__ import annotations

MET, NOT_MET, NOT_MEASURED = "met", "not met", "not measured"
K4, K16, K64 = 4096, 16384, 65536

# (key, description, threshold, unit)
TARGETS = (
    ("flex_eager_4k", "eager fwd+bwd vs FlexAttention eager, 4K", 1.0, "x"),
    ("flex_eager_16k", "eager fwd+bwd vs FlexAttention eager, 16K", 1.3, "x"),
    ("fwd_tflops_16k", "forward TFLOP/s, 16K", 350.0, "TFLOP/s"),
    ("fwd_tflops_64k", "forward TFLOP/s, 64K", 350.0, "TFLOP/s"),
    ("bwd_tflops_16k", "backward TFLOP/s, 16K", 250.0, "TFLOP/s"),
    ("bwd_tflops_64k", "backward TFLOP/s, 64K", 250.0, "TFLOP/s"),
    ("cudnn_16k", "fwd+bwd vs cuDNN dense SDPA, 16K", 18.0, "x"),
    ("cudnn_64k", "fwd+bwd vs cuDNN dense SDPA, 64K", 70.0, "x"),
    ("hf_attention_4k", "fwd+bwd vs HF BigBird attention, 4K", 20.0, "x"),
    ("train_mfu_4k", "training MFU, BigBird-base 4K, bf16", 0.35, "fraction"),
    ("train_scaling_16k", "training tokens/s 16K over 4K, equal tokens per step", 0.8, "x"),
    ("train_scaling_64k", "training tokens/s 64K over 4K, equal tokens per step", 0.8, "x"),
    ("promoter_scan", "promoter scan, both strands", 0.5, "Gbp/min"),
)


def _not_measured(why: str) -> tuple[None, str]:
    return None, why


def _on_gpu(data: dict | None, name: str) -> str | None:
    """Why ``data`` holds no measurement (missing, smoke or CPU run), or None when it does."""
    if not data:
        return f"no {name} results"
    env = data.get("environment") or {}
    if data.get("smoke") or env.get("device_type", "cuda") != "cuda":
        return f"{name}: smoke run, not on a GPU"
    return None


def _attention_row(data: dict, method: str | None, seq: int) -> tuple[dict | None, str]:
    """The batch-1, unmasked row of ``method`` (None: the default variant of ours) at ``seq``;
    for ``"flex"`` the fastest timed Flex row. Returns (row or None, why not)."""
    rows = [r for r in data.get("results", []) if r.get("batch") == 1 and r.get("seq") == seq
            and not r.get("key_padding_mask")]
    if method is None:
        default = f"triton:{data.get('default_variant')}"
        candidates = ([r for r in rows if r["method"] == default]
                      or [r for r in rows if r["method"].startswith("triton:")])
    elif method == "flex":
        candidates = [r for r in rows if r["method"].startswith("flex")]
    else:
        candidates = [r for r in rows if r["method"] == method]
    timed = [r for r in candidates if r.get("fwd_bwd_ms") and "failed" not in r and "skipped" not in r]
    if timed:
        return min(timed, key=lambda r: r["fwd_bwd_ms"]), ""
    name = "ours" if method is None else method
    if not candidates:
        return None, f"no {name} row at B=1 T={seq}"
    reasons = "; ".join(f"{r['method']}: {r.get('failed') or r.get('skipped') or 'not timed'}" for r in candidates)
    return None, f"{name} at T={seq} not timed ({reasons})"[:300]


def _ratio(data, baseline: str, seq: int) -> tuple[float | None, str]:
    ours, why = _attention_row(data, None, seq)
    other, why_other = _attention_row(data, baseline, seq)
    if ours is None or other is None:
        return _not_measured(why or why_other)
    detail = (f"B=1 T={seq}: {other['method']} {other['fwd_bwd_ms']:.3f} ms over {ours['method']} "
              f"{ours['fwd_bwd_ms']:.3f} ms (spreads {_spread(other):.1f}%, {_spread(ours):.1f}%)")
    if ours.get("graph_fwd_bwd_ms") and other.get("graph_fwd_bwd_ms"):
        detail += f"; GPU time (CUDA graph) {other['graph_fwd_bwd_ms'] / ours['graph_fwd_bwd_ms']:.2f}x"
    return other["fwd_bwd_ms"] / ours["fwd_bwd_ms"], detail


def _spread(row: dict) -> float:
    return ((row.get("timing") or {}).get("fwd_bwd") or {}).get("spread_pct", float("nan"))


def _tflops(data, part: str, seq: int) -> tuple[float | None, str]:
    ours, why = _attention_row(data, None, seq)
    if ours is None:
        return _not_measured(why)
    if not ours.get(f"{part}_tflops"):
        return _not_measured(f"{ours['method']} at T={seq} has no {part} timing")
    ms = ours.get(f"{part}_ms")
    return ours[f"{part}_tflops"], f"B=1 T={seq} {ours['method']}, eager {part}" + (f" {ms:.3f} ms" if ms else "")


def _train_rows(train: dict, seq: int, method: str = "ours") -> list[dict]:
    return [r for r in train.get("results", []) if r.get("role") == "scaling" and r.get("seq") == seq
            and r.get("method") == method and "tokens_per_s" in r]


def _train_mfu(train) -> tuple[float | None, str]:
    """The better MFU of the eager and the compiled (``ours+compile``) 4K equal-tokens rows."""
    rows = _train_rows(train, K4) + _train_rows(train, K4, method="ours+compile")
    if not rows:
        return _not_measured("no timed equal-tokens training row at 4K")
    row = max(rows, key=lambda r: r.get("mfu") or 0.0)
    if row.get("mfu") is None:
        return _not_measured(f"dense bf16 peak of '{(train.get('environment') or {}).get('device')}' unknown")
    return row["mfu"], (f"{row['method']} {row['batch']} x {row['seq']}: {row['model_tflops']:.0f} model TFLOP/s of "
                        f"{row['peak_bf16_tflops']} peak, step {row['step_ms']:.1f} ms")


def _train_scaling(train, seq: int) -> tuple[float | None, str]:
    base, long = _train_rows(train, K4), _train_rows(train, seq)
    if not base or not long:
        return _not_measured(f"no timed equal-tokens training rows at 4K and T={seq}")
    base, long = base[0], long[0]
    if base["tokens_per_step"] != long["tokens_per_step"]:
        return _not_measured(f"tokens per step differ: {base['tokens_per_step']} at 4K, {long['tokens_per_step']}")
    return long["tokens_per_s"] / base["tokens_per_s"], (
        f"{long['batch']} x {long['seq']}: {long['tokens_per_s']:.0f} tokens/s over {base['batch']} x {base['seq']}: "
        f"{base['tokens_per_s']:.0f}")


def _promoter(scan) -> tuple[float | None, str]:
    if scan.get("strands") != "both":
        return _not_measured(f"scan strands {scan.get('strands')!r}, not both")
    if (scan.get("genome_bp") or 0) < 200e6:
        return _not_measured(f"scanned {scan.get('genome_bp')} bp, the target is measured on at least 200 Mbp "
                             f"({scan.get('gbp_per_min')} Gbp/min)")
    return scan["gbp_per_min"], f"{scan.get('genome_bp')} bp in {scan.get('seconds')} s, both strands"


# The step files a target reads, by the first word of its key: the first one present is read.
SOURCES = {"flex": ("attention_more", "attention"), "fwd": ("attention", "attention_more", "attention_dense"),
           "bwd": ("attention", "attention_more", "attention_dense"), "cudnn": ("attention_dense", "attention"),
           "hf": ("attention_dense", "attention"), "train": ("train_all", "train"), "promoter": ("promoter_scan",)}


def measure(key: str, files: dict) -> tuple[float | None, str]:
    """(measured value or None, detail) of target ``key`` (a :data:`TARGETS` key)."""
    kind = key.split("_")[0]
    name = next((name for name in SOURCES[kind] if files.get(name)), " or ".join(SOURCES[kind]))
    data = files.get(name)
    why = _on_gpu(data, name)
    if why:
        return _not_measured(why)
    if kind in ("flex", "fwd", "bwd", "cudnn", "hf"):
        seq = {"4k": K4, "16k": K16, "64k": K64}[key.rsplit("_", 1)[1]]
        if kind in ("fwd", "bwd"):
            return _tflops(data, kind, seq)
        return _ratio(data, {"flex": "flex", "cudnn": "sdpa:cudnn", "hf": "hf"}[kind], seq)
    if kind == "train":
        return _train_mfu(data) if key == "train_mfu_4k" else _train_scaling(data, K16 if "16k" in key else K64)
    return _promoter(data)


def target_table(files: dict) -> list[dict]:
    """One dict per :data:`TARGETS` entry (target, threshold, unit, measured, status, detail), from
    ``files``: the parsed results of a suite call's steps by step name (absent or None: not run)."""
    table = []
    for key, text, threshold, unit in TARGETS:
        try:
            value, detail = measure(key, files)
        except (KeyError, TypeError, ValueError, ZeroDivisionError) as err:  # a malformed file: say so
            value, detail = None, f"unreadable results: {type(err).__name__}: {err}"
        status = NOT_MEASURED if value is None else MET if value >= threshold else NOT_MET
        table.append({"key": key, "target": text, "threshold": threshold, "unit": unit, "measured": value,
                      "status": status, "detail": detail})
    return table


def markdown(table: list[dict]) -> str:
    lines = ["| target | threshold | measured | status | detail |", "|---|---|---|---|---|"]
    def show(value: float, unit: str) -> str:
        return f"{100 * value:.1f}%" if unit == "fraction" else f"{value:.2f} {unit}"
    for t in table:
        measured = "-" if t["measured"] is None else show(t["measured"], t["unit"])
        lines.append(f"| {t['target']} | >= {show(t['threshold'], t['unit'])} | {measured} | {t['status']} "
                     f"| {t['detail']} |")
    return "\n".join(lines)
