"""A fine-tuning run stopped mid-epoch resumes with the batches it had not trained on yet.

Labelled tasks (promoter, classify) train whole epochs over a shuffled map-style dataset. The
train loader records how many batches of the epoch were trained on; a resumed run skips exactly
those in the same shuffled order (no data loaded for them), so it ends with the weights of an
uninterrupted run, and it sees every training sequence once per epoch.
"""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.demo.synthetic_promoters import plant_promoters
from bigbird_dna.training.faults import Preempted
from tests.promoter.conftest import PROMOTER_FAST, lambda_seq, write_fasta

pytestmark = pytest.mark.slow


@pytest.fixture
def promoter_data(tmp_path):
    genome = write_fasta(tmp_path / "toy.fa", {"chrA": lambda_seq()})
    fasta, bed = plant_promoters(genome, tmp_path / "planted", num=40, margin_bp=800, seed=5)
    return ["task=promoter", "data=promoter_epdnew", f"data.fasta={fasta}", f"data.bed={bed}",
            "data.upstream_bp=150", "data.downstream_bp=100", "data.val_records=[]", "data.test_records=[]",
            "data.holdout_fraction=0.15", "data.batch_size=4",
            "trainer.max_steps=7", "trainer.val_check_interval=100", "trainer.check_val_every_n_epoch=null",
            "test=false"]


def _weights(path) -> dict[str, torch.Tensor]:
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    return {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}


def test_a_fine_tune_stopped_mid_epoch_resumes_where_it_stopped(promoter_data, tmp_path, monkeypatch):
    from bigbird_dna.train import run
    from tests.conftest import compose

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    common = [*PROMOTER_FAST, *promoter_data]
    record = tmp_path / "batches"

    def train(run_dir, *extra):
        return run(compose([*common, *extra, "+callbacks.record._target_=tests.faults.callbacks.RecordLabels",
                            f"+callbacks.record.path={record / run_dir.name}.jsonl"], run_dir))

    stopped_dir = tmp_path / "stopped"
    with pytest.raises(Preempted):
        train(stopped_dir, "+callbacks.usr1._target_=tests.faults.callbacks.SignalAtStep", "+callbacks.usr1.step=2")
    saved = torch.load(stopped_dir / "hpc_ckpt_1.ckpt", map_location="cpu", weights_only=True)
    position = next(v["train_position"] for k, v in saved.items() if isinstance(v, dict) and "train_position" in v)
    assert saved["global_step"] == 3 and (position["epoch"], position["batches"]) == (0, 3)
    train(stopped_dir)
    train(tmp_path / "straight")

    seen = [line for line in (record / "stopped.jsonl").read_text().splitlines()]
    straight = (record / "straight.jsonl").read_text().splitlines()
    assert seen == straight and len(straight) == 7  # the same batches, in the same order, once each
    ours, theirs = _weights(stopped_dir / "checkpoints" / "last.ckpt"), _weights(tmp_path / "straight" / "checkpoints"
                                                                                 / "last.ckpt")
    for name, tensor in theirs.items():
        assert torch.allclose(ours[name], tensor, rtol=1e-5, atol=1e-7), name


def test_a_fine_tune_resumes_from_its_checkpoint_after_its_backbone_export_has_gone(promoter_data, tmp_path,
                                                                                    monkeypatch):
    """A resumed fine-tune builds its encoder from the checkpoint, not from ``task.backbone``: the
    export may be moved or deleted while the run waits in a queue, and the run still ends with the
    weights of an uninterrupted one."""
    from bigbird_dna.tokenizer import train_bpe_tokenizer
    from bigbird_dna.train import run
    from tests.conftest import compose
    from tests.promoter.conftest import make_export

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    for name in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    seq = lambda_seq()
    tokenizer = train_bpe_tokenizer([seq[i:i + 2000] for i in range(0, len(seq), 2000)], vocab_size=128,
                                    max_token_length=8)
    backbone = make_export(tmp_path / "pretrain" / "export", "mlm", tokenizer, dropout=0.1)
    common = [*PROMOTER_FAST, *promoter_data, f"task.backbone={backbone}"]

    def train(run_dir, *extra):
        return run(compose([*common, *extra], run_dir))

    stopped_dir = tmp_path / "stopped"
    with pytest.raises(Preempted):
        train(stopped_dir, "+callbacks.usr1._target_=tests.faults.callbacks.SignalAtStep", "+callbacks.usr1.step=2")
    train(tmp_path / "straight")
    backbone.rename(tmp_path / "moved")
    summary = train(stopped_dir)
    assert summary["global_step"] == 7
    resumed = torch.load(stopped_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert resumed["hyper_parameters"]["backbone"] == str(backbone)
    assert resumed["hyper_parameters"]["model"]["dropout"] == 0.1, "the backbone's own dropout, as first resolved"
    ours, theirs = _weights(stopped_dir / "checkpoints" / "last.ckpt"), _weights(tmp_path / "straight" / "checkpoints"
                                                                                 / "last.ckpt")
    for name, tensor in theirs.items():
        assert torch.allclose(ours[name], tensor, rtol=1e-5, atol=1e-7), name
