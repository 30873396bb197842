"""Training batches are page-locked when the trainer runs on CUDA, so Lightning's non-blocking
copies never make the host wait for the GPU; on CPU nothing is pinned."""
import json
from types import SimpleNamespace

import torch

from bigbird_dna.data import loaders
from tests.conftest import LAMBDA


def _trainer(device: str):
    return SimpleNamespace(strategy=SimpleNamespace(root_device=torch.device(device)))


def test_batches_are_pinned_for_a_cuda_trainer_only():
    assert loaders.pins_memory(_trainer("cuda:0"))
    assert not loaders.pins_memory(_trainer("cpu"))
    assert not loaders.pins_memory(None)


def test_the_genome_loader_takes_the_trainers_choice(train_in_process, tmp_path, monkeypatch):
    from bigbird_dna.data.mlm import datamodule as mlm

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    record = tmp_path / "pinning.json"
    overrides = [f"data.fasta={LAMBDA}", "+callbacks.pin._target_=tests.faults.callbacks.RecordPinning",
                 f"+callbacks.pin.path={record}"]
    train_in_process(*overrides, run_dir=tmp_path / "cpu")
    assert json.loads(record.read_text()) == {"train": False}
    monkeypatch.setattr(mlm, "pins_memory", lambda trainer: True)  # as on a CUDA trainer
    train_in_process(*overrides, run_dir=tmp_path / "pinned")
    assert json.loads(record.read_text()) == {"train": True}
