"""SIGUSR1 outside SLURM: checkpoint at the next step, stop with exit status 75, resume by itself.

The same mechanism runs on the real local SLURM cluster in tests/cluster/test_slurm.py, where the
job is also requeued.
"""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.training.faults import Preempted
from tests.conftest import LAMBDA

pytestmark = pytest.mark.slow

COMMON = [f"data.fasta={LAMBDA}", "trainer.max_steps=8", "trainer.val_check_interval=4"]


def test_sigusr1_saves_a_checkpoint_at_the_next_step_and_the_rerun_resumes_from_it(train_in_process, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    run_dir = tmp_path / "preempted"
    with pytest.raises(Preempted, match=r"stopped by SIGUSR1 at step 6: saved .*hpc_ckpt_1\.ckpt.*Not a SLURM job"):
        train_in_process(*COMMON, "+callbacks.usr1._target_=tests.faults.callbacks.SignalAtStep",
                         "+callbacks.usr1.step=5", run_dir=run_dir)
    saved = torch.load(run_dir / "hpc_ckpt_1.ckpt", map_location="cpu", weights_only=True)
    assert saved["global_step"] == 6
    assert saved["loops"]["fit_loop"]["state_dict"]["combined_loader"][0]["batches"] == 6
    assert not (run_dir / "summary.json").exists()

    # The same command again (no ckpt_path) picks the preemption checkpoint up by itself, and ends
    # where an uninterrupted run ends.
    resumed, _ = train_in_process(*COMMON, run_dir=run_dir)
    straight, straight_dir = train_in_process(*COMMON, run_dir=tmp_path / "straight")
    assert resumed["global_step"] == straight["global_step"] == 8
    ours = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    theirs = torch.load(straight_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    for name, tensor in theirs["state_dict"].items():
        if isinstance(tensor, torch.Tensor):
            assert torch.allclose(ours["state_dict"][name], tensor, rtol=1e-5, atol=1e-7), name
    assert resumed["val/loss"] == pytest.approx(straight["val/loss"], rel=1e-5)
