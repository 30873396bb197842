"""A chromatin fine-tune on the DeepSEA stream, stopped mid-epoch, resumes with the slabs' batches
it had not trained on: the same batches, in the same order, and the weights of an uninterrupted run."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.training.faults import Preempted
from tests.chromatin.test_train_chromatin import TINY
from tests.conftest import compose

pytestmark = pytest.mark.slow


def _weights(path) -> dict[str, torch.Tensor]:
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}


def test_a_deepsea_fine_tune_stopped_mid_epoch_resumes_where_it_stopped(planted_bundle, tmp_path, monkeypatch):
    from bigbird_dna.train import run

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    common = [*TINY, "task=chromatin", "data=deepsea", f"data.dir={planted_bundle}", "data.batch_size=16",
              "data.chunk_size=64", "tokenizer.sample_bp=100000", "trainer.max_steps=7",
              "trainer.val_check_interval=100", "trainer.check_val_every_n_epoch=null", "test=false"]
    record = tmp_path / "batches"

    def train(run_dir, *extra):
        return run(compose([*common, *extra, "+callbacks.record._target_=tests.faults.callbacks.RecordLabels",
                            f"+callbacks.record.path={record / run_dir.name}.jsonl"], run_dir))

    stopped = tmp_path / "stopped"
    with pytest.raises(Preempted):
        train(stopped, "+callbacks.usr1._target_=tests.faults.callbacks.SignalAtStep", "+callbacks.usr1.step=2")
    train(stopped)
    train(tmp_path / "straight")
    straight = (record / "straight.jsonl").read_text().splitlines()
    assert (record / "stopped.jsonl").read_text().splitlines() == straight and len(straight) == 7
    ours, theirs = _weights(stopped / "checkpoints" / "last.ckpt"), _weights(tmp_path / "straight" / "checkpoints"
                                                                             / "last.ckpt")
    for name, tensor in theirs.items():
        assert torch.allclose(ours[name], tensor, rtol=1e-5, atol=1e-7), name
