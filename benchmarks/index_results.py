"""The index of the benchmark results: ``benchmarks/results/README.md``, one table row per file.

    python benchmarks/index_results.py           # rewrite the index after adding or moving results
    python benchmarks/index_results.py --check   # exit 1 if the index is out of date

Every results file lives in ``benchmarks/results/<YYYY-MM-DD>_<machine>/`` (the layout of
``benchmarks/common/results.py``); a file elsewhere is an error that names it. The table gives the
date, machine, benchmark (the file name without its suffix), a link to the file and, for the
kinds of result known here, one headline figure read from the file. The test
``tests/benchmarks/test_results_index.py`` fails while the committed index differs from this.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common.results import RESULTS  # noqa: E402

INDEX = RESULTS / "README.md"
FOLDER = re.compile(r"^(\d{4}-\d{2}-\d{2})_([a-z0-9.-]+)$")


def _ours_attention(d: dict) -> str:
    ours = f"triton:{d.get('default_variant', 'preload-fused')}"
    rows = [r for r in d["results"] if r["method"] == ours and r["batch"] == 1 and r.get("fwd_bwd_ms")]
    row = max(rows, key=lambda r: r["seq"])
    graph = f", graph {row['graph_fwd_bwd_ms']:.3f} ms" if row.get("graph_fwd_bwd_ms") else ""
    return f"ours fwd+bwd {row['fwd_bwd_ms']:.3f} ms at T={row['seq']}{graph}"


def _flex_over_ours(d: dict) -> str:
    graph = {r["method"]: r["graph_ms"] for r in d["results"] if r["seq"] == 16384}
    return f"Flex / ours GPU time at 16K: {graph['flex'] / graph['triton:preload-fused']:.2f}x"


def _suite(d: dict) -> str:
    ok = sum(s["exit_status"] == 0 for s in d["steps"])
    met = [line["status"] == "met" for line in d.get("target_table", [])]
    return f"{ok} of {len(d['steps'])} steps ok" + (f", {sum(met)} of {len(met)} targets met" if met else "")


def _genome_scale(d: dict) -> str:
    if "peak_rss_ratio_largest_to_smallest" in d:
        return f"predict peak RSS, largest over smallest record: {d['peak_rss_ratio_largest_to_smallest']}x"
    scan = d["predict"]
    return f"{d['genome']['bases'] / 1e6:g} Mbp: predict {scan['wall_s']} s, peak RSS {scan['peak_rss_mb']} MB"


def _train(d: dict) -> str:
    row = next(r for r in d["results"] if r["role"] == "scaling" and r.get("tokens_per_s"))
    mfu = f", MFU {100 * row['mfu']:.1f}%" if row.get("mfu") else ""
    return f"{row['tokens_per_s']:,.0f} tokens/s at {row['batch']} x {row['seq']}{mfu}"


def _speedup(d: dict) -> str:
    ref, value = next((k[len("speedup_over_"):], v) for k, v in d.items() if k.startswith("speedup_over_"))
    return f"{value:.2f}x over {ref}"


HEADLINES = {  # the file name up to its first "-": one figure
    "attention": _ours_attention, "attention_flex": _ours_attention, "graph_overhead": _flex_over_ours,
    "gpu_suite": _suite, "genome_scale": _genome_scale, "train_throughput": _train, "cpu_train_step": _speedup,
    "cpu_compile_step": lambda d: f"compiled layers {d['compiled_speedup']:.2f}x eager",
    "cpu_predict": lambda d: f"{d['runs']['default']['mbp_per_min']} Mbp/min (default)",
    "cpu_score": lambda d: f"{next(iter(d['runs'].values()))['ms_per_masked_row']} ms per masked row",
    "default_command": lambda d: f"val {d['val_bits_per_base']} bits/base",
    "finetune_cpu": lambda d: f"seed 0 test AUROC {d['finetune']['runs']['seed0']['test/auroc']:.3f}",
    "hybrid_cpu": lambda d: "hybrid_tiny {:,} bp/s at 2040 bp, tiny {:,} bp/s at 510 bp".format(
        d["runs"][2]["bases_per_s"], d["runs"][0]["bases_per_s"]),
    "planted_motif": lambda d: ", ".join(f"{name} val AUROC {run['final_val_auroc']:.3f}"
                                         for name, run in d["runs"].items()),
    "cpu_explain_memory": lambda d: "{} bp in {} s, peak RSS {:.2f}x the {} bp run's".format(
        d["runs"][-1]["bases"], d["runs"][-1]["seconds"], d["peak_rss_ratio_longest_to_shortest"],
        d["runs"][0]["bases"]),
    "explain_planted": lambda d: "top-k in sites {} (untrained {}), test AUROC {:.3f}".format(
        d["top_k_trained"]["mean_share_in_sites"], d["top_k_untrained"]["mean_share_in_sites"],
        d["test_auroc"]["test/auroc"]),
    "labelled_defaults": lambda d: ", ".join(
        "{} model {:.3f}, LR {:.3f}, CNN {:.3f}".format(
            name, *(t["verdict"]["mean"][k] for k in ("model", "kmer_lr", "cnn"))) for name, t in d["tasks"].items()),
    "host_path": lambda d: f"{d['rows'][0]['fwd_bwd_us']:.0f} us host time per fwd+bwd at T={d['rows'][0]['seq']}",
    "host_profile": lambda d: f"{d['host_ms_per_step']:.3f} ms host time per step at T={d['seq']}",
    "markov_learnability": lambda d: "best val {} bits/base".format(
        min(r["val_bits_per_base"] for r in d["runs"] if "val_bits_per_base" in r)),
    "mlm_recipe": lambda d: f"{len(d)} entries, {d[0]['date']} to {d[-1]['date']}",
    "pretrain_gpu": lambda d: f"best val {d['best']['val_bits_per_base']:.4f} bits/base at step {d['best']['step']}",
    "pretrain_gpu_baselines": lambda d: "val bidirectional k-mer {:.4f} bits/base".format(
        d["metrics"]["val/baseline/markov_bidirectional_bits_per_base"]),
    "promoter_pretrain": lambda d: "val AUROC {pretrained:.3f} pretrained, {scratch:.3f} scratch".format(
        **d["mean_val_auroc"]),
    "promoter_scan": lambda d: f"{d['gbp_per_min']} Gbp/min, both strands",
    "scan_pipeline": lambda d: f"up to {max(r['mbp_per_min'] for r in d['runs'])} Mbp/min",
    "splice_annotation": lambda d: ", ".join(
        f"{r['dinucleotides']['canonical_share']:.2%} {r['dinucleotides']['canonical']} of {r['sites']['after_dedup']} "
        f"{task.removeprefix('splice_')}" for task, r in d["runs"].items()),
    "tokenizer": lambda d: f"{min(r['encode_mbps_cpu'] for r in d['single_thread']):.2f} Mbp/s on one core (slowest)",
    "torch_attention_paths": lambda d: f"dense path {d['runs'][0]['dense_speedup_forward']}x gather at density "
                                       f"{d['runs'][0]['density']}",
}


def headline(path: Path) -> str:
    """One figure of a results file, or "" where its kind is unknown or the file lacks the field."""
    reader = HEADLINES.get(path.name.split("-")[0].split(".")[0]) if path.suffix == ".json" else None
    try:
        return reader(json.loads(path.read_text())) if reader else ""
    except (KeyError, TypeError, ValueError, IndexError, StopIteration, ZeroDivisionError):
        return ""


def rows(results: Path = RESULTS) -> list[tuple[str, ...]]:
    """``(date, machine, benchmark, relative path, headline)`` of every results file, sorted."""
    found = []
    for path in sorted(p for p in results.rglob("*") if p.is_file() and p != results / INDEX.name):
        match = FOLDER.match(path.parent.name)
        if path.parent.parent != results or not match:
            raise ValueError(f"{path.relative_to(results.parent.parent)} is not in a <YYYY-MM-DD>_<machine>/ "
                             "folder of benchmarks/results/: move it there (benchmarks/README.md, 'Results')")
        found.append((*match.groups(), path.name.split(".")[0], path.relative_to(results).as_posix(),
                      headline(path)))
    return found


def index_text(results: Path = RESULTS) -> str:
    lines = ["# Benchmark results", "",
             "Written by `python benchmarks/index_results.py` from the files below; do not edit by hand.",
             "Each file lies in `<date>_<machine>/`: the day it was measured (UTC) and the machine "
             "(`h100`, `h200`: the GPU; `cpu-2core`: a CPU and its cores). How to run and read them: "
             "[benchmarks/README.md](../README.md).", "",
             "| date | machine | benchmark | file | headline |", "|---|---|---|---|---|"]
    lines += [f"| {day} | {machine} | {name} | [{Path(rel).name}]({rel}) | {figure} |"
              for day, machine, name, rel, figure in rows(results)]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the index is out of date")
    args = parser.parse_args(argv)
    text = index_text()
    if args.check:
        stale = not INDEX.is_file() or INDEX.read_text() != text
        print(f"{INDEX.relative_to(RESULTS.parent.parent)} is {'out of date' if stale else 'up to date'}")
        return int(stale)
    INDEX.write_text(text)
    print(f"wrote {INDEX.relative_to(RESULTS.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
