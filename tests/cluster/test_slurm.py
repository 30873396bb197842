"""Against a real SLURM cluster: a Hydra sweep through the submitit launcher, and SIGUSR1
preemption of an sbatch job (checkpoint, requeue, resume)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from omegaconf import OmegaConf

from tests.cluster.conftest import job_state, wait_for
from tests.conftest import FAST_OVERRIDES, LAMBDA, REPO, run_cli

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def test_hydra_sweep_through_the_submitit_slurm_launcher(slurm_cluster, tmp_path):
    sweep = tmp_path / "sweep"
    result = run_cli("bigbird_dna.train", "-m", "hydra/launcher=slurm", "optim.lr=1e-4,3e-4",
                     f"hydra.sweep.dir={sweep}", f"hydra.launcher.partition={slurm_cluster}",
                     "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=1", "hydra.launcher.timeout_min=10",
                     "trainer.accelerator=cpu", f"data.fasta={LAMBDA}", *FAST_OVERRIDES,
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}, timeout=900)
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    lrs = set()
    for job in ("0", "1"):
        run_dir = sweep / job
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["global_step"] == 4
        last = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
        assert last["global_step"] == 4
        assert list((run_dir / "checkpoints").glob("best-*.ckpt"))
        lrs.add(OmegaConf.load(run_dir / "config.yaml").optim.lr)
    assert lrs == {1e-4, 3e-4}
    # Both array tasks ran under SLURM and finished (sacct: what submitit itself polls).
    (script,) = sweep.glob(".submitit/*/*_submission.sh")
    sbatch = script.read_text()
    assert "#SBATCH --ntasks-per-node=1" in sbatch and "#SBATCH --signal=USR1@180" in sbatch
    assert "--gpus-per-node" not in sbatch  # trainer.accelerator=cpu: no GPU request
    array_id = script.parent.name
    done = [f"{array_id}_0|COMPLETED", f"{array_id}_1|COMPLETED"]

    def states():  # a job may still be finishing when its result pickle is already there
        return sorted(subprocess.run(["sacct", "-n", "-P", "-X", "-j", array_id, "-o", "JobID,State"],
                                     capture_output=True, text=True).stdout.split())

    try:
        wait_for(lambda: states() == done, 120, f"sacct to show {done}")
    except AssertionError:
        assert states() == done


def test_sigusr1_checkpoints_requeues_and_the_requeued_job_resumes(slurm_cluster, tmp_path):
    run_dir, log = tmp_path / "run", tmp_path / "job.out"
    steps = 30
    env = {**os.environ, "PYTHON": sys.executable, "RUN_DIR": str(run_dir),
           "BIGBIRD_DNA_CACHE": str(tmp_path / "cache"), "PYTHONUNBUFFERED": "1"}
    submit = subprocess.run(
        ["sbatch", "--parsable", f"--partition={slurm_cluster}", "--gpus-per-node=0", "--ntasks-per-node=1",
         "--cpus-per-task=1", "--mem=1G", "--time=10", f"--output={log}", f"--chdir={REPO}",
         str(REPO / "workflows" / "slurm" / "sbatch_train.sh"),
         "trainer.accelerator=cpu", f"data.fasta={LAMBDA}", *FAST_OVERRIDES, f"trainer.max_steps={steps}",
         "trainer.val_check_interval=10"],
        env=env, capture_output=True, text=True, timeout=60)
    assert submit.returncode == 0, submit.stderr
    job = submit.stdout.strip().split(";")[0]
    try:
        # config.yaml is written after the handler is armed: from then on SIGUSR1 means "checkpoint".
        wait_for(lambda: (run_dir / "config.yaml").exists(), 300, "the job to start training")
        subprocess.run(["scancel", "--signal=USR1", job], check=True, timeout=30)
        final = wait_for(lambda: (s := job_state(job)).get("JobState") in ("COMPLETED", "FAILED", "CANCELLED",
                                                                          "TIMEOUT", "NODE_FAIL") and s,
                         480, f"job {job} to finish")
    finally:
        subprocess.run(["scancel", job], capture_output=True)
    text = log.read_text() if log.exists() else ""
    assert final["JobState"] == "COMPLETED", (final, text[-4000:])
    assert int(final["Restarts"]) == 1, final

    (checkpoint,) = run_dir.glob("hpc_ckpt_*.ckpt")
    saved = torch.load(checkpoint, map_location="cpu", weights_only=True)
    assert 1 <= saved["global_step"] < steps
    assert f"stopped by SIGUSR1 at step {saved['global_step']}: saved {checkpoint}" in text, text[-4000:]
    assert f"SLURM requeued job {job}" in text
    assert "(restart 1)" in text and f"Resuming from {checkpoint}" in text
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["global_step"] == steps
