"""``benchmarks/pretrain_gpu.sh``, the one-call-at-a-time driver of ``experiment=pretrain_gpu``, on
a CPU-sized version of the recipe: a first call stops on its limit with a checkpoint, the second
resumes that run directory where it stopped (not from step 0) and finishes it, a third only
reports; ``benchmarks/pretrain_curve.py`` turns the run's logs into the expected learning curve."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import pytest
import torch

from benchmarks.pretrain_curve import read_curve, report
from tests.conftest import LAMBDA, REPO

DRIVER = REPO / "benchmarks" / "pretrain_gpu.sh"
# The recipe shrunk to a CPU run of seconds: tiny encoder, PyTorch attention, 256-token windows of
# the lambda phage; 12 steps validated every 4, no DataLoader workers.
SMALL = [f"data.fasta={LAMBDA}", "model.hidden_size=32", "model.num_layers=2", "model.num_heads=2",
         "model.intermediate_size=64", "model.max_positions=256", "model.attention.block_size=16",
         "model.attention.backend=torch", "data.window_bp=254", "data.batch_size=4", "data.windows_per_epoch=32",
         "data.eval_windows=4", "trainer.accelerator=cpu", "trainer.precision=32-true",
         "trainer.enable_model_summary=false"]
TINY = [*SMALL, "data.num_workers=0", "trainer.max_steps=12", "trainer.val_check_interval=4",
        "trainer.log_every_n_steps=1"]
# What the call's time limit does (SIGTERM to the trainer), at a known step: after step 5 -> saved at step 6.
SIGTERM_AT_5 = ["+callbacks.stop._target_=tests.faults.callbacks.SignalAtStep", "+callbacks.stop.step=5",
                "+callbacks.stop.signal=SIGTERM"]


def _driver(tmp_path, out: str, *overrides: str, timeout: int = 600, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHON": sys.executable, "PYTHONUNBUFFERED": "1", "RUN_DIR": str(tmp_path / "run"),
                "OUT": str(tmp_path / out), "BIGBIRD_DNA_CACHE": str(tmp_path / "cache"), **env}
    return subprocess.run(["bash", str(DRIVER), *overrides], cwd=tmp_path, env=full_env, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _rows(path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t" if path.suffix == ".tsv" else ","))


def _step(path) -> int:
    return int(torch.load(path, map_location="cpu", weights_only=True)["global_step"])


@pytest.mark.slow
def test_a_stopped_call_is_resumed_by_the_next_and_the_curve_has_every_validation(tmp_path):
    run_dir = tmp_path / "run"

    # Call 1: a new run, stopped by SIGTERM after step 5 -> hpc_ckpt_1.ckpt at step 6, trainer exit 75.
    first = _driver(tmp_path, "out1", *TINY, *SIGTERM_AT_5)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "stopped by SIGTERM at step 6" in first.stdout
    assert _step(run_dir / "hpc_ckpt_1.ckpt") == 6
    assert not (run_dir / "summary.json").exists()
    assert "call 1 (new, " in first.stdout and "exit 75" in first.stdout
    assert "step 6 of 12 (50%): in progress" in first.stdout
    assert "val bits/base at [MASK]:" in first.stdout and "bidirectional k-mer (k=" in first.stdout
    early = json.loads((tmp_path / "out1" / "pretrain_gpu.json").read_text())
    assert [p["step"] for p in early["curve"]] == [4] and early["status"] == "in progress"
    assert early["baselines"]["source"].startswith("computed")  # no summary yet: the run's own reference_metrics

    # Call 2: the same command resumes the same directory from step 6 and finishes at step 12.
    second = _driver(tmp_path, "out2", *TINY)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert f"Resuming from {run_dir / 'hpc_ckpt_1.ckpt'}" in second.stdout
    calls = _rows(run_dir / "calls.tsv")
    assert [(c["call"], c["exit"], c["resumed"]) for c in calls] == [("1", "75", "new"), ("2", "0", "resumed")]
    assert (run_dir / "config.resume-1.yaml").is_file()  # resumed in place, not in a new directory
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["global_step"] == 12 and summary["run_dir"] == str(run_dir)
    # Continued, not restarted: the second call logged steps 7..12 only (a restart would log 1..12).
    resumed_train = [int(r["step"]) + 1 for r in _rows(run_dir / "logs" / "version_1" / "metrics.csv")
                     if r.get("train/loss")]
    assert resumed_train == list(range(7, 13))
    assert "step 12 of 12 (100%): finished" in second.stdout and "final (best checkpoint): val" in second.stdout
    assert (tmp_path / "out2" / "summary.json").is_file()

    # Call 3: a finished run is not trained again; the call only reports.
    stamp = (run_dir / "summary.json").stat().st_mtime_ns
    third = _driver(tmp_path, "out3", *TINY)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert "nothing to train" in third.stdout
    assert len(_rows(run_dir / "calls.tsv")) == 2 and (run_dir / "summary.json").stat().st_mtime_ns == stamp
    assert not (run_dir / "logs" / "version_2").exists()

    # The learning curve: one point per validation of the fit, from the call that ran it.
    curve = json.loads((tmp_path / "out3" / "pretrain_gpu.json").read_text())
    assert curve["status"] == "finished" and curve["global_step"] == 12 and curve["max_steps"] == 12
    assert [(p["step"], p["logs_version"]) for p in curve["curve"]] == [(4, 0), (8, 1), (12, 1)]
    logged = {(version, int(r["step"]) + 1): float(r["val/bits_per_base"])
              for version in (0, 1) for r in _rows(run_dir / "logs" / f"version_{version}" / "metrics.csv")
              if r.get("val/bits_per_base") and int(r["step"]) < 12}
    for point in curve["curve"]:
        assert point["val_bits_per_base"] == logged[(point["logs_version"], point["step"])]
        assert point["train_loss"] is not None
    # the final numbers are the best checkpoint's: the curve's best point
    best = min(curve["curve"], key=lambda p: p["val_loss"])
    assert curve["best"]["step"] == best["step"]
    assert summary["best_checkpoint"].endswith(f"best-step{best['step']}.ckpt")
    assert summary["val/bits_per_base"] == pytest.approx(best["val_bits_per_base"], rel=1e-6)
    assert curve["final"]["test/bits_per_base"] == summary["test/bits_per_base"]
    # baselines: the summary's, and the ones computed after call 1 were the same numbers
    assert curve["baselines"]["source"] == "summary.json"
    for split in ("val", "test"):
        for name in ("unigram", "markov_causal", "markov_bidirectional"):
            assert curve["baselines"][split][name] == summary[f"{split}/baseline/{name}_bits_per_base"]
            assert early["baselines"][split][name] == pytest.approx(curve["baselines"][split][name], rel=1e-9)
    assert [(c["call"], c["first_step"], c["last_step"]) for c in curve["calls"]] == [(1, 1, 6), (2, 7, 12)]
    assert all(c["steps_per_s"] > 0 and c["tokens_per_s"] > 0 for c in curve["calls"])
    assert curve["tokens_per_step"] == 4 * 256
    assert (tmp_path / "out3" / "pretrain_gpu.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_the_time_limit_stops_the_trainer_with_a_checkpoint_despite_dataloader_workers(tmp_path):
    """The real limit: `timeout` sends SIGTERM to the trainer only; with DataLoader workers a SIGTERM
    to the whole process group would kill a worker and end the trainer before it saves."""
    endless = [*SMALL, "data.num_workers=2", "trainer.max_steps=100000", "trainer.val_check_interval=50",
               "trainer.log_every_n_steps=10"]
    result = _driver(tmp_path, "out", *endless, CALL_SECONDS="40", RESERVE_SECONDS="5", timeout=300)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (call,) = _rows(tmp_path / "run" / "calls.tsv")
    assert call["exit"] == "75", result.stdout[-3000:]
    assert "stopped by SIGTERM at step" in result.stdout and "DataLoader worker" not in result.stdout
    assert _step(tmp_path / "run" / "hpc_ckpt_1.ckpt") > 0
    assert "next: call again" in result.stdout


def _write_csv(path, header: list[str], rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def test_the_curve_skips_the_best_checkpoints_revalidation_and_takes_the_newest_version(tmp_path):
    """Logs as a run writes them: a fit row has step = global step - 1; a call killed after the
    validation at step 8 resumed from step 4 and re-logged steps 5..8 (its numbers win); after the
    fit, the best checkpoint was validated and tested at step 12 itself (not a curve point)."""
    header = ["epoch", "step", "test/bits_per_base", "train/loss", "train/lr", "val/bits_per_base", "val/loss",
              "val/acc"]

    def train(step: int, loss: float) -> dict:
        return {"epoch": 0, "step": step - 1, "train/loss": loss, "train/lr": 1e-3}

    def val(step: int, bits: float, logged: int | None = None) -> dict:
        return {"epoch": 0, "step": step - 1 if logged is None else logged, "val/bits_per_base": bits,
                "val/loss": bits * 0.6931, "val/acc": 0.4}

    _write_csv(tmp_path / "logs" / "version_0" / "metrics.csv", header,
               [train(s, 2.0) for s in range(1, 5)] + [val(4, 1.95)] + [train(s, 9.9) for s in range(5, 9)]
               + [val(8, 1.90), train(9, 9.9)])
    _write_csv(tmp_path / "logs" / "version_1" / "metrics.csv", header,
               [train(s, 1.5) for s in range(5, 9)] + [val(8, 1.91)] + [train(s, 1.4) for s in range(9, 13)]
               + [val(12, 1.85), val(12, 1.85, logged=12), {"epoch": 1, "step": 12, "test/bits_per_base": 1.87}])
    (tmp_path / "config.yaml").write_text("seed: 0\ntrainer: {max_steps: 12}\nmodel: {max_positions: 256}\n"
                                          "data: {batch_size: 4}\n")
    points, _ = read_curve(tmp_path, final_step=12)
    assert [(p["step"], p["val_bits_per_base"], p["logs_version"]) for p in points] == [
        (4, 1.95, 0), (8, 1.91, 1), (12, 1.85, 1)]
    assert [p["train_loss"] for p in points] == [pytest.approx(2.0), pytest.approx(1.5), pytest.approx(1.4)]
    rep = report(tmp_path, compute_baselines_too=False)
    assert rep["status"] == "not started"  # no checkpoint in this directory
    assert rep["best"] == {"step": 12, "val_bits_per_base": 1.85, "val_loss": pytest.approx(1.85 * 0.6931)}
    assert rep["baselines"] is None and rep["max_steps"] == 12 and rep["tokens_per_step"] == 1024
