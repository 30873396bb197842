"""SIGTERM and Ctrl-C stop a run at a step boundary with a checkpoint (exit 75), and a full disk
stops it with one error line (exit 2), leaving every earlier checkpoint whole."""

from __future__ import annotations

import re
import shlex
import subprocess

import pytest
import torch
import yaml

from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli

pytestmark = pytest.mark.slow

# Not the defaults (debug=fast: 4 steps, validation every 2, lr 1e-3): a resume must keep them.
COMMON = [*FAST_OVERRIDES, f"data.fasta={LAMBDA}", "trainer.max_steps=8", "trainer.val_check_interval=4",
          "optim.lr=2e-3"]


def _weights(path) -> dict[str, torch.Tensor]:
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}


@pytest.mark.parametrize("signame, message", [("SIGTERM", "stopped by SIGTERM at step 4"),
                                              ("SIGINT", "stopped by SIGINT at step 4")])
def test_a_signal_checkpoints_at_the_step_boundary_and_the_resume_matches_an_uninterrupted_run(
        tmp_path, signame, message):
    run_dir = tmp_path / "stopped"
    stopped = run_cli("bigbird_dna.train", *COMMON, f"hydra.run.dir={run_dir}",
                      "+callbacks.stop._target_=tests.faults.callbacks.SignalAtStep", "+callbacks.stop.step=3",
                      f"+callbacks.stop.signal={signame}", timeout=300)
    assert stopped.returncode == 75, stopped.stderr[-3000:]
    assert "Traceback" not in stopped.stderr
    assert message in stopped.stderr and f"ckpt_path=last hydra.run.dir={run_dir}" in stopped.stderr
    assert "requeue" not in stopped.stderr.lower() or "nothing was requeued" in stopped.stderr
    assert torch.load(run_dir / "hpc_ckpt_1.ckpt", map_location="cpu", weights_only=True)["global_step"] == 4
    assert not (run_dir / "summary.json").exists()

    # The resume command it printed, run as printed, ends where an uninterrupted run ends, with the
    # run's own length, validation interval and learning-rate schedule.
    printed = re.search(r"Resume with: python -m bigbird_dna\.train (.+)", stopped.stderr).group(1)
    resumed = run_cli("bigbird_dna.train", *shlex.split(printed), timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    record = yaml.safe_load((run_dir / "config.resume-1.yaml").read_text())
    assert record["trainer"]["max_steps"] == 8 and record["trainer"]["val_check_interval"] == 4
    assert record["optim"]["lr"] == 2e-3
    assert torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)["global_step"] == 8
    straight = run_cli("bigbird_dna.train", *COMMON, f"hydra.run.dir={tmp_path / 'straight'}", timeout=300)
    assert straight.returncode == 0, straight.stderr[-3000:]
    ours, theirs = _weights(run_dir / "checkpoints" / "last.ckpt"), _weights(tmp_path / "straight" / "checkpoints" /
                                                                             "last.ckpt")
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert torch.allclose(ours[name], tensor, rtol=1e-5, atol=1e-7), name


@pytest.fixture
def small_disk(tmp_path):
    """A 64 MiB tmpfs (needs root, as on CI); unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (not root?): {made.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_during_a_checkpoint_gives_one_error_and_keeps_earlier_checkpoints(small_disk, tmp_path):
    run_dir = small_disk / "run"
    result = run_cli("bigbird_dna.train", *FAST_OVERRIDES, f"data.fasta={LAMBDA}", "trainer.max_steps=8",
                     "trainer.val_check_interval=2", f"hydra.run.dir={run_dir}",
                     "+callbacks.fill._target_=tests.faults.callbacks.FillDiskAtStep", "+callbacks.fill.step=3",
                     f"+callbacks.fill.folder={small_disk}", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")},
                     timeout=300)
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no space left" in errors[0], result.stderr[-3000:]
    checkpoints = sorted((run_dir / "checkpoints").iterdir())
    assert [p.name for p in checkpoints] == ["best-step2.ckpt", "last.ckpt"], checkpoints
    for path in checkpoints:
        assert torch.load(path, map_location="cpu", weights_only=True)["global_step"] == 2
    assert not list(run_dir.rglob("*.partial")) and not (run_dir / "export").exists()
