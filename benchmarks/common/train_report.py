"""What ``benchmarks/train_throughput.py`` reports from its rows: the ratios that compare them
(:func:`summarise`, rewritten into the results after every row) and a markdown table."""
from __future__ import annotations


def summarise(rows: list[dict]) -> dict:
    """Ratios the rows give: tokens/s of each longer equal-tokens row over the shortest one's, and
    ours over HF at the comparison rows (the best variant of ours); compiled over eager at the
    shortest equal-tokens length."""
    done = [r for r in rows if "tokens_per_s" in r]
    summary: dict = {}
    scaling = sorted((r for r in done if r["role"] == "scaling" and r["method"] == "ours"), key=lambda r: r["seq"])
    if scaling:
        base = scaling[0]
        summary["scaling_base"] = {key: base[key] for key in ("seq", "batch", "tokens_per_step")}
        for r in scaling[1:]:
            summary[f"tokens_per_s_{r['seq']}_over_{base['seq']}"] = r["tokens_per_s"] / base["tokens_per_s"]
        compiled = [r for r in done if r["method"] == "ours+compile" and r["seq"] == base["seq"]]
        if compiled:
            summary["compiled_over_eager_tokens_per_s"] = compiled[0]["tokens_per_s"] / base["tokens_per_s"]
    ours = [r for r in done if r["role"] == "vs_hf" and r["method"] == "ours"]
    hf = [r for r in done if r["role"] == "vs_hf" and r["method"] == "hf"]
    if ours and hf:
        best = max(ours, key=lambda r: r["tokens_per_s"])
        summary["best_variant_vs_hf"] = best.get("variant")
        summary["ours_over_hf_tokens_per_s"] = best["tokens_per_s"] / hf[0]["tokens_per_s"]
    return summary


def markdown_table(rows: list[dict]) -> str:
    lines = ["| method | role | variant | ckpt | B | T | tokens/s | step ms | spread % | MFU % | peak GiB |",
             "|" + "---|" * 11]
    fmt = lambda x, spec: "-" if x is None else format(x, spec)  # noqa: E731
    for r in rows:
        lead = (f"| {r['method']} | {r['role']} | {r.get('variant') or '-'} | {r.get('checkpoint_layers', '-')} "
                f"| {r['batch']} | {r['seq']} ")
        if "skipped" in r:
            lines.append(f"{lead}| skipped: {r['skipped']} |||||")
            continue
        mfu_pct = None if r.get("mfu") is None else 100 * r["mfu"]
        lines.append(f"{lead}| {r['tokens_per_s']:.0f} | {r['step_ms']:.1f} | {r['timing']['spread_pct']:.1f} "
                     f"| {fmt(mfu_pct, '.1f')} | {fmt(r['peak_gib'], '.1f')} |")
    return "\n".join(lines)
