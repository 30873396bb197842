"""The two non-benchmark steps of ``benchmarks/gpu_suite.sh``: the machine record and the merge.

    python -m benchmarks.common.gpu_suite_report env OUT/env.json [--dry-run]
    python -m benchmarks.common.gpu_suite_report merge OUT --stamp 2026-01-01-1200 [--dry-run] \
        [--profile default --budget-s 510 --elapsed-s 480]

``merge`` reads ``OUT/git.json`` (the commit and dirty flag the suite recorded before its first
step), ``OUT/steps.tsv`` (step, exit status, seconds, limit), every step's JSON (and the -v log of the
tests), writes ``OUT/gpu_suite.json`` with device, versions, clocks, commit and dirty flag (outside
a dry run also ``benchmarks/results/<date>_<machine>/gpu_suite-<HHMM>.json``, date and time from
the stamp), and prints a short table: one line per step, the attention and training figures, then
the target table (``targets.py``: each of the issue's
targets met, not met or not measured), which the merged file holds too. A step that timed out
(status 124) or failed keeps whatever JSON it wrote before.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import re
from pathlib import Path

from benchmarks.common.results import results_dir, write_json
from benchmarks.common.targets import markdown, target_table

# The runtime dependencies bigbird_dna imports (pyproject), by import name.
RUNTIME_MODULES = ("torch", "triton", "lightning", "hydra", "omegaconf", "antlr4", "tokenizers", "pyfaidx", "Bio",
                   "torchmetrics", "h5py", "scipy", "numpy", "matplotlib", "tqdm", "submitit", "transformers")
OUTCOME = "PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS"
# `pytest -v` prints "path::test OUTCOME"; with xdist (-n), "[gw0] [ 10%] OUTCOME path::test"
TEST_LINE = re.compile(rf"^(?P<id>\S+::\S+)\s+(?P<outcome>{OUTCOME})"
                       rf"|^\[gw\d+\] \[\s*\d+%\] (?P<outcome2>{OUTCOME}) (?P<id2>\S+::\S+)")


def write_env(path: Path, dry_run: bool) -> None:
    import torch

    from benchmarks.common.harness import environment

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
    """Per (B, T, mask): each timed row's eager and CUDA-graph fwd+bwd, spread, host time per call
    and TFLOP/s."""
    lines = []
    for r in (data or {}).get("results", []):
        head = f"B={r['batch']} T={r['seq']}{' mask' if r.get('key_padding_mask') else ''} {r['method']}"
        if "fwd_bwd_ms" not in r:
            lines.append(f"{head}: {'FAILED ' + r['failed'] if 'failed' in r else 'skipped: ' + str(r.get('skipped'))}")
            continue
        spread = ((r.get("timing") or {}).get("fwd_bwd") or {}).get("spread_pct")
        graph = (f", graph {r['graph_fwd_bwd_ms']:.3f} ms" if r.get("graph_fwd_bwd_ms")
                 else f", graph failed: {r['graph_failed']}" if r.get("graph_failed") else "")
        tflops = (f", fwd {r['fwd_tflops']:.0f} / bwd {r['bwd_tflops']:.0f} TFLOP/s"
                  if r.get("fwd_tflops") and r.get("bwd_tflops") else "")
        spread = "" if spread is None else f" (spread {spread:.1f}%)"
        host = f", host {r['host_ms']:.3f} ms/call" if r.get("host_ms") else ""
        lines.append(f"{head}: eager {r['fwd_bwd_ms']:.3f} ms{spread}{graph}{host}{tflops}")
    return lines


# The steps' result files (``<name>.json`` under the suite's $OUT); absent ones merge as None.
STEP_FILES = ("attention", "train", "promoter_scan", "attention_dense", "attention_mask", "attention_more",
              "train_all", "attention_variants")
ATTENTION_FILES = tuple(name for name in STEP_FILES if name.startswith("attention"))


def merge(out: Path, stamp: str, dry_run: bool, call: dict | None = None) -> Path:
    """The merged file of a suite call in ``out``; ``call``: its profile, budget and seconds so far."""
    steps = []
    for line in (out / "steps.tsv").read_text().splitlines() if (out / "steps.tsv").exists() else []:
        name, rc, seconds, limit = line.split("\t")
        steps.append({"step": name, "exit_status": int(rc), "timed_out": rc in ("124", "137"),
                      "seconds": int(seconds), "limit_s": int(limit)})
    env = read_json(out / "env.json") or {}
    tree = read_json(out / "git.json") or {"commit": env.get("commit"), "dirty": env.get("dirty"),
                                           "git_status": env.get("git_status")}
    results = {"suite": "benchmarks/gpu_suite.sh", "dry_run": dry_run, "stamp": stamp, "call": call or {},
               "commit": tree.get("commit"), "dirty": tree.get("dirty"), "git_status": tree.get("git_status"),
               "device": env.get("device"), "versions": env.get("versions"),
               "clocks_and_power": env.get("nvidia_smi_gpu"), "environment": env, "steps": steps,
               "tests": count_test_outcomes(out / "tests.log")}
    for name in STEP_FILES:
        results[name] = read_json(out / f"{name}.json")
    results["other_commit_in"] = [name for name in STEP_FILES
                                   if (results[name] or {}).get("commit") not in (None, results["commit"])]
    results["target_table"] = target_table(results)
    path = write_json(out / "gpu_suite.json", results)
    print_table(results)
    print(f"wrote {path}")
    if not dry_run:
        day, time = stamp[:10], stamp[11:]
        print(f"wrote {write_json(results_dir(env, day) / f'gpu_suite-{time}.json', results)}")
    return path


def print_table(results: dict) -> None:
    dirty = "DIRTY tree (results flagged)" if results["dirty"] else "clean tree"
    print(f"\n{results['device']}  commit {str(results['commit'])[:10]} ({dirty})  {results['versions']}")
    print(f"clocks/power: {results['clocks_and_power']}")
    print(f"call: {results['call']}")
    print("| step | status | s | limit s |\n|---|---|---|---|")
    for s in results["steps"]:
        status = "timed out" if s["timed_out"] else "ok" if s["exit_status"] == 0 else f"exit {s['exit_status']}"
        print(f"| {s['step']} | {status} | {s['seconds']} | {s['limit_s']} |")
    print(f"tests: {results['tests']['tests']} failed: {results['tests']['failed'][:10]}")
    for name in ATTENTION_FILES:
        for line in attention_lines(results[name]):
            print(f"{name}: {line}")
    rows = [row for name in ("train", "train_all") for row in (results[name] or {}).get("results", [])]
    for row in rows:
        peak = "-" if row.get("peak_gib") is None else f"{row['peak_gib']:.1f}"
        mfu = "-" if row.get("mfu") is None else f"{100 * row['mfu']:.1f}%"
        value = row.get("skipped") or (f"{row['tokens_per_s']:.0f} tok/s (spread {row['timing']['spread_pct']:.1f}%), "
                                       f"MFU {mfu}, peak {peak} GiB")
        print(f"train {row['method']} {row.get('role', '')} {row.get('variant') or ''} T={row['seq']} B={row['batch']} "
              f"ckpt={row.get('checkpoint_layers', '-')}: {value}")
    scan = results["promoter_scan"] or {}
    if scan:
        print(f"promoter scan: {scan.get('gbp_per_min')} Gbp/min, strands {scan.get('strands')}")
    label = " (dry run: smoke values are not measurements)" if results["dry_run"] else ""
    print(f"\ntargets{label}:\n{markdown(results['target_table'])}")


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
    merged.add_argument("--profile", default=None, help="the call: default, extra, only or dry-run")
    merged.add_argument("--budget-s", type=int, default=None, help="the seconds the call allows")
    merged.add_argument("--elapsed-s", type=int, default=None, help="the call's seconds before the merge")
    args = parser.parse_args(argv)
    if args.command == "env":
        write_env(args.path, args.dry_run)
    else:
        merge(args.out, args.stamp, args.dry_run,
              {"profile": args.profile, "budget_s": args.budget_s, "seconds_before_merge": args.elapsed_s})


if __name__ == "__main__":
    main()
