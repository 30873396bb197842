"""The two non-benchmark steps of ``benchmarks/gpu_suite.sh``: the machine record and the merge.

    python benchmarks/gpu_suite_report.py env OUT/env.json [--dry-run]
    python benchmarks/gpu_suite_report.py merge OUT --stamp 2026-01-01-1200 [--dry-run]

``merge`` reads ``OUT/steps.tsv`` (step, exit status, seconds), every step's JSON (and the -v log
of the tests), writes ``OUT/gpu-<stamp>.json`` (copied to ``benchmarks/results/`` outside a dry
run) with device, versions, clocks and commit, and prints a short table: one line per step, then
the issue's targets as measured ratios. A step that timed out (status 124) or failed keeps
whatever JSON it wrote before.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

# The runtime dependencies bigbird_dna imports (pyproject), by import name.
RUNTIME_MODULES = ("torch", "triton", "lightning", "hydra", "omegaconf", "antlr4", "tokenizers", "pyfaidx", "Bio",
                   "torchmetrics", "h5py", "scipy", "numpy", "matplotlib", "tqdm", "submitit", "transformers")
OUTCOME = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
# `pytest -v` prints "path::test OUTCOME"; with xdist (-n), "[gw0] [ 10%] OUTCOME path::test"
TEST_LINE = re.compile(rf"^(?P<id>\S+::\S+)\s+(?P<outcome>{OUTCOME})"
                       rf"|^\[gw\d+\] \[\s*\d+%\] (?P<outcome2>{OUTCOME}) (?P<id2>\S+::\S+)")


def write_env(path: Path, dry_run: bool) -> None:
    import torch

    from benchmarks.harness import environment

    device = "cuda" if torch.cuda.is_available() and not dry_run else "cpu"
    env = environment(device)
    env["missing_modules"] = [m for m in RUNTIME_MODULES if importlib.util.find_spec(m) is None]
    path.write_text(json.dumps(env, indent=2))
    print(json.dumps({k: env.get(k) for k in ("device", "versions", "missing_modules")}))


def read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def count_test_outcomes(log: Path) -> dict:
    """Counts and failing test ids from a ``pytest -v`` log (complete or cut by a timeout)."""
    outcomes: dict = {"tests": {}, "failed": []}
    if log.exists():
        for line in log.read_text(errors="replace").splitlines():
            match = TEST_LINE.match(line)
            if match:
                test_id, outcome = match["id"] or match["id2"], match["outcome"] or match["outcome2"]
                outcomes["tests"][outcome] = outcomes["tests"].get(outcome, 0) + 1
                if outcome in ("FAILED", "ERROR"):
                    outcomes["failed"].append(test_id)
    return outcomes


def attention_lines(data: dict | None) -> list[str]:
    """Per (T, mask): our best variant's fwd+bwd ms and TFLOP/s, and each baseline's time over it."""
    if not data:
        return []
    lines, configs = [], {}
    for row in data.get("results", []):
        configs.setdefault((row["batch"], row["seq"], row.get("key_padding_mask")), []).append(row)
    for (batch, seq, mask), rows in configs.items():
        timed = [r for r in rows if "fwd_bwd_ms" in r]
        ours = [r for r in timed if r["method"].startswith("triton")]
        if not ours:
            continue
        best = min(ours, key=lambda r: r["fwd_bwd_ms"])
        ratios = " ".join(f"{r['method']} {r['fwd_bwd_ms'] / best['fwd_bwd_ms']:.2f}x" for r in timed if r is not best)
        lines.append(f"B={batch} T={seq}{' mask' if mask else ''}: best {best['method']} {best['fwd_bwd_ms']:.3f} ms "
                     f"(fwd {best['fwd_tflops']:.0f}, bwd {best['bwd_tflops']:.0f} TFLOP/s); {ratios}")
    return lines


def targets(attention: dict | None, train: dict | None, graph: dict | None = None) -> dict:
    """The issue's targets as measured ratios (None where a row is missing)."""
    found: dict = {}
    rows = [r for r in (attention or {}).get("results", []) if "fwd_bwd_ms" in r and r["batch"] == 1]

    def best(method_prefix: str, seq: int):
        hits = [r for r in rows if r["method"].startswith(method_prefix) and r["seq"] == seq]
        return min(hits, key=lambda r: r["fwd_bwd_ms"]) if hits else None

    for seq in (4096, 16384, 65536):
        ours = best("triton", seq)
        if ours is None:
            continue
        for name, prefix in (("flex", "flex"), ("sdpa", "sdpa"), ("hf", "hf")):
            other = best(prefix, seq)
            if other is not None:
                found[f"{name}_over_ours_{seq}"] = other["fwd_bwd_ms"] / ours["fwd_bwd_ms"]
        if seq >= 16384:
            found[f"ours_fwd_tflops_{seq}"], found[f"ours_bwd_tflops_{seq}"] = ours["fwd_tflops"], ours["bwd_tflops"]
    big, small = best("triton", 65536), best("triton", 16384)
    if big and small and big.get("peak_mib") and small.get("peak_mib"):
        found["peak_memory_64k_over_16k"] = big["peak_mib"] / small["peak_mib"]
    replays = [r for r in (graph or {}).get("results", []) if "graph_ms" in r]
    for seq in sorted({r["seq"] for r in replays}):
        ours = [r["graph_ms"] for r in replays if r["seq"] == seq and r["method"].startswith("triton")]
        flex = [r["graph_ms"] for r in replays if r["seq"] == seq and r["method"] == "flex"]
        if ours and flex:  # GPU time alone (CUDA-graph replays), no host in the way
            found[f"flex_over_ours_graph_{seq}"] = min(flex) / min(ours)
    for key, value in ((train or {}).get("summary") or {}).items():
        if isinstance(value, float):
            found[f"train_{key}"] = value
    return found


def merge(out: Path, stamp: str, dry_run: bool) -> Path:
    steps = []
    for line in (out / "steps.tsv").read_text().splitlines() if (out / "steps.tsv").exists() else []:
        name, rc, seconds = line.split("\t")
        steps.append({"step": name, "exit_status": int(rc), "timed_out": rc in ("124", "137"), "seconds": int(seconds)})
    env = read_json(out / "env.json") or {}
    results = {"suite": "benchmarks/gpu_suite.sh", "dry_run": dry_run, "stamp": stamp,
               "device": env.get("device"), "commit": env.get("commit"), "versions": env.get("versions"),
               "clocks_and_power": env.get("nvidia_smi_gpu"), "environment": env, "steps": steps,
               "tests": count_test_outcomes(out / "tests.log")}
    for name in ("attention", "attention_mask", "graph_overhead", "train", "promoter_scan"):
        results[name] = read_json(out / f"{name}.json")
    results["targets"] = targets(results["attention"], results["train"], results["graph_overhead"])
    path = out / f"gpu-{stamp}{'-dryrun' if dry_run else ''}.json"
    path.write_text(json.dumps(results, indent=2, default=str))
    if not dry_run:
        (REPO / "benchmarks" / "results").mkdir(exist_ok=True)
        shutil.copy(path, REPO / "benchmarks" / "results" / path.name)
    print_table(results)
    print(f"wrote {path}")
    return path


def print_table(results: dict) -> None:
    print(f"\n{results['device']}  commit {str(results['commit'])[:10]}  {results['versions']}")
    print(f"clocks/power: {results['clocks_and_power']}")
    print("| step | status | s |\n|---|---|---|")
    for s in results["steps"]:
        status = "timed out" if s["timed_out"] else "ok" if s["exit_status"] == 0 else f"exit {s['exit_status']}"
        print(f"| {s['step']} | {status} | {s['seconds']} |")
    print(f"tests: {results['tests']['tests']} failed: {results['tests']['failed'][:10]}")
    for line in attention_lines(results["attention"]) + attention_lines(results["attention_mask"]):
        print(line)
    for row in (results.get("graph_overhead") or {}).get("results", []):
        if "graph_ms" in row:
            print(f"graph T={row['seq']} {row['method']}: eager {row['eager_ms']:.3f} ms, "
                  f"CUDA-graph replay {row['graph_ms']:.3f} ms")
    train = results["train"] or {}
    for row in train.get("results", []):
        peak = "-" if row.get("peak_gib") is None else f"{row['peak_gib']:.1f}"
        value = row.get("skipped") or f"{row['tokens_per_s']:.0f} tok/s, peak {peak} GiB"
        print(f"train {row['method']} {row.get('variant') or ''} T={row['seq']} B={row['batch']} "
              f"ckpt={row.get('checkpoint_layers', '-')}: {value}")
    scan = results["promoter_scan"] or {}
    if scan:
        print(f"promoter scan: {scan.get('gbp_per_min')} Gbp/min (target {scan.get('target_gbp_per_min')})")
    label = "smoke values, not measurements" if results["dry_run"] else "measured ratios"
    print(f"targets ({label}):", json.dumps({k: round(v, 2) for k, v in results["targets"].items()}))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    env = sub.add_parser("env")
    env.add_argument("path", type=Path)
    env.add_argument("--dry-run", action="store_true")
    merged = sub.add_parser("merge")
    merged.add_argument("out", type=Path)
    merged.add_argument("--stamp", required=True)
    merged.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "env":
        write_env(args.path, args.dry_run)
    else:
        merge(args.out, args.stamp, args.dry_run)


if __name__ == "__main__":
    main()
