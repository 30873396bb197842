"""Learning curve and standing of an MLM run directory, e.g. one of ``experiment=pretrain_gpu``.

Reads what the run wrote (``logs/version_*/metrics.csv``, one version per call; ``summary.json``
once finished; ``config.yaml`` / ``config.resume-<n>.yaml``; the newest checkpoint's step) and
what ``benchmarks/pretrain_gpu.sh`` adds (``calls.tsv``, ``calls/call<n>.log``), and writes:

- ``--out`` (JSON; default: ``benchmarks/results/<date>_<machine>/pretrain_gpu.json``): the honest
  val bits/base at [MASK] inputs at every validation of the fit, with the mean train loss and the
  learning rate since the previous one; the unigram, causal and bidirectional k-mer baselines on
  the same val and test bases; the best validation; the final val/test numbers of the best
  checkpoint (``summary.json``); every call's exit, seconds, steps and speed;
- ``--png`` (default: ``--out`` with ``.png``): that curve with the baselines as lines (needs
  matplotlib);
- on stdout, a few lines: where the run stands.

Reading the logs: a metrics.csv row of the fit has ``step`` = global step - 1 (the step done
before it was logged), so a validation at global step G is the row at step G - 1. After the
fit, ``train`` validates and tests the best checkpoint and logs those rows at the final global
step itself: they are not points of the curve (their numbers are in ``summary.json``). A call
that resumes re-logs the steps after its checkpoint; the newest version wins.

Baselines: from ``summary.json`` when there is one, else computed here exactly as the run will
(its data config, tokenizer and seed; ``evaluation.reference.reference_metrics`` of its data) and kept in
``<run dir>/baselines.json`` for the next call (``--no-compute-baselines`` skips that).

    python benchmarks/pretrain_curve.py outputs/pretrain_gpu/run [--out PATH] [--png PATH]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.pretrain_curve_render import BASELINES, plot, status_lines  # noqa: E402
from benchmarks.common.results import add_out_argument, default_out, write_json  # noqa: E402

STEP_LINE = re.compile(r"^step (\d+)/(\d+) \| ([0-9.]+) steps/s")


def _float(row: dict[str, str], key: str) -> float | None:
    value = row.get(key)
    return float(value) if value not in (None, "") else None


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text()) or {}


def newest_config(run_dir: Path) -> dict[str, Any]:
    """The config of the run's newest call: ``config.resume-<n>.yaml`` (highest n) or ``config.yaml``."""
    resumes = sorted(run_dir.glob("config.resume-*.yaml"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
    path = resumes[-1] if resumes else run_dir / "config.yaml"
    return _yaml(path) if path.is_file() else {}


def metrics_versions(run_dir: Path) -> list[tuple[int, list[dict[str, str]]]]:
    """``(n, rows)`` of every ``logs/version_<n>/metrics.csv``, oldest first."""
    found = []
    for path in (run_dir / "logs").glob("version_*/metrics.csv"):
        number = path.parent.name.rsplit("_", 1)[1]
        if number.isdigit():
            with open(path, newline="") as handle:
                found.append((int(number), list(csv.DictReader(handle))))
    return sorted(found, key=lambda item: item[0])


def read_curve(run_dir: Path, final_step: int | None) -> tuple[list[dict], dict[int, dict]]:
    """Validations of the fit (one point per global step, newest version wins) and train rows.

    Args:
        final_step: the run's last global step (``summary.json``'s, else ``trainer.max_steps``):
            validation rows logged at it or later are the best checkpoint's re-validation after
            the fit, not points of the curve.
    """
    val: dict[int, dict] = {}
    train: dict[int, dict] = {}
    for version, rows in metrics_versions(run_dir):
        for row in rows:
            logged = int(row["step"])
            loss = _float(row, "train/loss")
            if loss is not None:
                train[logged + 1] = {"loss": loss, "lr": _float(row, "train/lr"), "version": version}
            bits = _float(row, "val/bits_per_base")
            if bits is None or (final_step is not None and logged >= final_step):
                continue
            val[logged + 1] = {"step": logged + 1, "val_bits_per_base": bits, "val_loss": _float(row, "val/loss"),
                               "val_acc": _float(row, "val/acc"), "logs_version": version}
    points, previous = [], 0
    for step in sorted(val):
        since = [train[s] for s in sorted(train) if previous < s <= step]
        point = dict(val[step])
        point["train_loss"] = sum(t["loss"] for t in since) / len(since) if since else None
        point["lr"] = since[-1]["lr"] if since else None
        points.append(point)
        previous = step
    return points, train


def baselines_from(metrics: dict[str, Any], source: str) -> dict[str, Any] | None:
    """The baseline keys of a summary (or of ``reference_metrics``), per split."""
    out: dict[str, Any] = {"source": source}
    for split in ("val", "test"):
        values = {name: metrics.get(f"{split}/baseline/{name}_bits_per_base") for name in BASELINES}
        if all(v is not None for v in values.values()):
            out[split] = {**values, "scored_bases": metrics.get(f"{split}/baseline/scored_bases")}
    for kind in ("markov_causal", "markov_bidirectional"):
        out[f"{kind}_order"] = metrics.get(f"{kind}_order")
    return out if "val" in out else None


def compute_baselines(run_dir: Path, cfg: dict[str, Any]) -> dict[str, float]:
    """The run's own ``reference_metrics``: its data config, seed, tokenizer and context length."""
    from omegaconf import OmegaConf

    from bigbird_dna.evaluation.reference import reference_metrics
    from bigbird_dna.tokenizer import DNATokenizer
    from bigbird_dna.training.resolvers import instantiate, register_resolvers

    register_resolvers()
    with tempfile.TemporaryDirectory() as scratch:  # the data module writes its split manifest there
        datamodule = instantiate(OmegaConf.create(cfg["data"]), seed=cfg.get("seed", 0), run_dir=scratch,
                                 is_main_process=True)
        datamodule.attach_tokenizer(DNATokenizer.load(run_dir / "tokenizer.json"), cfg["model"]["max_positions"])
        return reference_metrics(datamodule)


def run_baselines(run_dir: Path, summary: dict | None, cfg: dict[str, Any], compute: bool) -> dict | None:
    if summary and (found := baselines_from(summary, "summary.json")):
        return found
    cached = run_dir / "baselines.json"
    if cached.is_file():
        return baselines_from(json.loads(cached.read_text()), "computed from the run's config (baselines.json)")
    if not compute or not cfg.get("data") or not (run_dir / "tokenizer.json").is_file():
        return None
    try:
        metrics = compute_baselines(run_dir, cfg)
    except Exception as err:  # noqa: BLE001 - the report must not fail for want of baselines
        print(f"(baselines not computed: {type(err).__name__}: {err})", file=sys.stderr)
        return None
    cached.write_text(json.dumps(metrics, indent=2) + "\n")
    return baselines_from(metrics, "computed from the run's config (baselines.json)")


def checkpoint_step(run_dir: Path) -> int | None:
    """Global step of the checkpoint a resume would start from (the newest), or None."""
    from bigbird_dna.errors import InputError
    from bigbird_dna.training.run_record import resolve_checkpoint

    try:
        path = resolve_checkpoint("last", run_dir)
    except InputError:
        return None
    import torch

    return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"])


def read_calls(run_dir: Path, tokens_per_step: int | None) -> list[dict[str, Any]]:
    """``calls.tsv`` with, from each call's log, its first and last step line and steps/s."""
    table = run_dir / "calls.tsv"
    if not table.is_file():
        return []
    calls = []
    with open(table, newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            call: dict[str, Any] = {"call": int(row["call"]), "started_utc": row["started_utc"],
                                    "seconds": int(row["seconds"]), "exit": int(row["exit"]),
                                    "resumed": row["resumed"], "device": row["device"]}
            log = run_dir / "calls" / f"call{row['call']}.log"
            lines = [m for m in map(STEP_LINE.match, log.read_text(errors="replace").splitlines()) if m] \
                if log.is_file() else []
            if lines:
                rate = float(lines[-1].group(3))
                call.update(first_step=int(lines[0].group(1)), last_step=int(lines[-1].group(1)), steps_per_s=rate,
                            tokens_per_s=round(rate * tokens_per_step) if tokens_per_step else None)
            calls.append(call)
    return calls


def report(run_dir: Path, compute_baselines_too: bool = True) -> dict[str, Any]:
    """Everything ``--out`` holds (see the module doc)."""
    run_dir = Path(run_dir)
    cfg = newest_config(run_dir)
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    step = checkpoint_step(run_dir)
    max_steps = (cfg.get("trainer") or {}).get("max_steps")
    finished = summary is not None and all(
        not p.is_file() or p.stat().st_mtime <= summary_path.stat().st_mtime
        for p in [run_dir / "checkpoints" / "last.ckpt", *run_dir.glob("hpc_ckpt_*.ckpt")])
    final_step = summary["global_step"] if summary else max_steps
    points, train = read_curve(run_dir, final_step)
    data, model = cfg.get("data") or {}, cfg.get("model") or {}
    tokens_per_step = (data.get("batch_size") * model.get("max_positions")
                       if data.get("batch_size") and model.get("max_positions") else None)
    best = min(points, key=lambda p: p["val_loss"] if p["val_loss"] is not None else math.inf) if points else None
    out: dict[str, Any] = {
        "what": "honest val bits/base at [MASK] inputs (all-[MASK] selection at data.eval_mask_prob) at every "
                "validation of the fit, next to the train-unigram and k-mer chain baselines scored on the same bases",
        "run_dir": str(run_dir),
        "status": "finished" if finished else "in progress" if step is not None else "not started",
        "global_step": summary["global_step"] if finished else step,
        "max_steps": max_steps,
        "tokens_per_step": tokens_per_step,
        "config": {
            "model": {k: model.get(k) for k in ("hidden_size", "num_layers", "num_heads", "intermediate_size",
                                                "max_positions", "dropout", "position", "conv_kernel")},
            "attention": model.get("attention"),
            "data": {k: data.get(k) for k in ("fasta", "window_bp", "batch_size", "mask_prob", "eval_mask_prob",
                                              "holdout_fraction", "val_records", "test_records", "windows_per_epoch")},
            "tokenizer": cfg.get("tokenizer"),
            "optim": {k: (cfg.get("optim") or {}).get(k) for k in ("lr", "weight_decay", "warmup_steps", "betas")},
            "trainer": {k: (cfg.get("trainer") or {}).get(k) for k in ("precision", "max_steps", "val_check_interval",
                                                                       "gradient_clip_val")},
            "seed": cfg.get("seed"),
        },
        "baselines": run_baselines(run_dir, summary, cfg, compute_baselines_too),
        "curve": points,
        "best": {k: best[k] for k in ("step", "val_bits_per_base", "val_loss")} if best else None,
        "final": ({k: v for k, v in summary.items() if k.startswith(("val/", "test/")) and "/baseline/" not in k}
                  | {k: summary.get(k) for k in ("best_checkpoint", "seconds")}) if finished else None,
        "calls": read_calls(run_dir, tokens_per_step),
        "train_rows": len(train),
    }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run_dir", type=Path)
    add_out_argument(parser, "pretrain_gpu")
    parser.add_argument("--png", type=Path, default=None, help="the figure (default: --out with .png)")
    parser.add_argument("--no-png", action="store_true")
    parser.add_argument("--no-compute-baselines", action="store_true",
                        help="use baselines only from summary.json or an earlier computation")
    parser.add_argument("--exit", type=int, default=None, help="the exit status of the call just made")
    args = parser.parse_args(argv)
    rep = report(args.run_dir, compute_baselines_too=not args.no_compute_baselines)
    out = write_json(args.out or default_out("pretrain_gpu", device="auto"), rep)
    png = args.png or out.with_suffix(".png")
    lines = status_lines(rep, args.exit)
    drawn = not args.no_png and plot(rep, png)
    lines.append(f"curve: {out}" + (f", {png}" if drawn else ""))
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    main()
