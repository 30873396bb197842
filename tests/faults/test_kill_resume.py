"""SIGKILL mid-run, then ``ckpt_path=last``: the resumed run continues exactly like an uninterrupted one.

Three real CLI runs at the same seed, with dropout, reverse-complement augmentation, two DataLoader
workers and an epoch boundary before the kill:

- A, uninterrupted, 15 steps, keeping a checkpoint of every step;
- B, the same run, SIGKILLed right after step 11 (``last.ckpt`` is then from step 9, 1 batch into
  epoch 1, an odd batch count, so the resumed loader must rotate its workers);
- C, B resumed in place with ``ckpt_path=last`` up to step 15.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys

import pytest
import torch

from tests.conftest import FAST_OVERRIDES, LAMBDA, REPO

pytestmark = pytest.mark.slow

STEPS, KILL_AT, SAVED_AT = 15, 11, 9
COMMON = [*FAST_OVERRIDES, f"data.fasta={LAMBDA}", "data.windows_per_epoch=32", "data.num_workers=2",
          f"trainer.max_steps={STEPS}", "trainer.val_check_interval=3", "seed=7"]


def _popen(run_dir, records, *extra, env):
    args = [sys.executable, "-m", "bigbird_dna.train", *COMMON, f"hydra.run.dir={run_dir}",
            "+callbacks.record._target_=tests.faults.callbacks.RecordBatches", f"+callbacks.record.folder={records}",
            *extra]
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _records(folder) -> dict[int, dict]:
    return {r["step"]: r for r in map(json.loads, (folder / "rank0.jsonl").read_text().splitlines())}


def _train_losses(metrics_csv) -> dict[int, float]:
    with open(metrics_csv) as handle:
        return {int(row["step"]): float(row["train/loss"]) for row in csv.DictReader(handle) if row.get("train/loss")}


def _assert_same_training_state(ours: dict, theirs: dict, exact: bool) -> None:
    def same(a, b):
        return torch.equal(a, b) if exact else torch.allclose(a, b, rtol=1e-5, atol=1e-7)

    for name, tensor in theirs["state_dict"].items():
        if not isinstance(tensor, torch.Tensor):  # the encoder's attention layouts (extra state)
            continue
        assert same(ours["state_dict"][name], tensor), f"weights differ: {name}"
    (opt_a,), (opt_b,) = ours["optimizer_states"], theirs["optimizer_states"]
    assert opt_a["param_groups"] == opt_b["param_groups"]
    assert opt_a["state"].keys() == opt_b["state"].keys()
    for index, state in opt_b["state"].items():
        for key, value in state.items():
            assert same(opt_a["state"][index][key], value), f"optimizer state differs: param {index} {key}"
    assert ours["lr_schedulers"] == theirs["lr_schedulers"]


def test_sigkill_then_resume_from_last_matches_an_uninterrupted_run(tmp_path):
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}
    reference = _popen(tmp_path / "A", tmp_path / "rec_A",
                       "+callbacks.every_step._target_=lightning.pytorch.callbacks.ModelCheckpoint",
                       f"+callbacks.every_step.dirpath={tmp_path / 'A' / 'steps'}",
                       "+callbacks.every_step.filename='step{step}'", "+callbacks.every_step.every_n_train_steps=1",
                       "+callbacks.every_step.save_top_k=-1", "+callbacks.every_step.auto_insert_metric_name=false",
                       env=env)
    killed = _popen(tmp_path / "B", tmp_path / "rec_B",
                    "+callbacks.kill._target_=tests.faults.callbacks.SigkillAtStep", f"+callbacks.kill.step={KILL_AT}",
                    env=env)
    out_a, err_a = reference.communicate(timeout=600)
    out_b, err_b = killed.communicate(timeout=600)
    assert reference.returncode == 0, err_a[-3000:]
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, err_b[-3000:])
    assert not (tmp_path / "B" / "summary.json").exists()

    # The killed run's last checkpoint is step 9, 1 batch into epoch 1; its state equals the
    # uninterrupted run's at step 9, and it holds the train loader's position.
    last_b = torch.load(tmp_path / "B" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last_b["global_step"] == SAVED_AT
    step_a = torch.load(tmp_path / "A" / "steps" / f"step{SAVED_AT}.ckpt", map_location="cpu", weights_only=True)
    _assert_same_training_state(last_b, step_a, exact=True)
    (position,) = last_b["loops"]["fit_loop"]["state_dict"]["combined_loader"]
    assert position == {"epoch": 1, "batches": 1, "batch_size": 4, "num_workers": 2, "world_size": 1}

    resumed = _popen(tmp_path / "B", tmp_path / "rec_C", "ckpt_path=last", env=env)
    out_c, err_c = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err_c[-3000:]
    assert "not resumable" not in err_c + out_c  # Lightning's warning for loaders without a state
    summary = json.loads((tmp_path / "B" / "summary.json").read_text())
    assert summary["global_step"] == STEPS

    # The resumed run trained steps 10..15 only, on the windows the uninterrupted run used there,
    # with the same losses.
    rec_a, rec_c = _records(tmp_path / "rec_A"), _records(tmp_path / "rec_C")
    assert sorted(rec_c) == list(range(SAVED_AT + 1, STEPS + 1))
    for step in rec_c:
        assert rec_c[step]["windows"] == rec_a[step]["windows"], f"step {step}: other windows"
        assert rec_c[step]["epoch"] == rec_a[step]["epoch"]
        assert rec_c[step]["loss"] == pytest.approx(rec_a[step]["loss"], rel=1e-5), f"step {step}: loss jumped"
    logged_a = _train_losses(tmp_path / "A" / "logs" / "version_0" / "metrics.csv")
    logged_c = _train_losses(tmp_path / "B" / "logs" / "version_1" / "metrics.csv")
    assert logged_c and min(logged_c) >= SAVED_AT
    for step, loss in logged_c.items():
        assert loss == pytest.approx(logged_a[step], rel=1e-5), f"logged train/loss differs at step {step}"

    # ... and ends in the same state.
    final_a = torch.load(tmp_path / "A" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    final_c = torch.load(tmp_path / "B" / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert final_c["global_step"] == final_a["global_step"] == STEPS
    _assert_same_training_state(final_c, final_a, exact=False)
