"""Inference exports: write/load round trip, refusal of folders that are not an export or hold
another task, and atomic writes (a failure leaves no half export)."""

from __future__ import annotations

import json

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model import export as export_module
from bigbird_dna.model.export import EXPORT_FILES, load_export, write_export
from bigbird_dna.tokenizer import train_bpe_tokenizer

MODEL_CONFIG = {"hidden_size": 8, "num_layers": 1}


@pytest.fixture(scope="module")
def tokenizer():
    seq = "ACGTTGCAAGCTTCGA" * 64
    return train_bpe_tokenizer([seq[i:i + 256] for i in range(0, len(seq), 256)], vocab_size=32, max_token_length=4)


def _state() -> dict:
    return {"encoder.weight": torch.arange(6, dtype=torch.float32).reshape(2, 3), "layout": torch.tensor([1, 0, 1])}


def test_write_then_load_round_trips_every_part(tmp_path, tokenizer):
    path = write_export(tmp_path / "run" / "export", "promoter", _state(), MODEL_CONFIG, tokenizer,
                        task_config={"predict_window_bp": 100}, metadata={"seed": 3})
    assert sorted(p.name for p in path.iterdir()) == sorted([*EXPORT_FILES, "model.pt", "tokenizer_config.json",
                                                                  "special_tokens_map.json", "README.md"])
    loaded = load_export(path, task="promoter")
    assert (loaded.task, loaded.model_config) == ("promoter", MODEL_CONFIG)
    assert loaded.task_config == {"predict_window_bp": 100}
    assert loaded.metadata == {"seed": 3, "tokenizer_sha256": tokenizer.sha256}
    assert loaded.state_dict.keys() == _state().keys()
    assert all(torch.equal(loaded.state_dict[k], v) for k, v in _state().items())
    assert loaded.tokenizer.sha256 == tokenizer.sha256 and loaded.path == path


def test_a_folder_that_is_not_an_export_is_refused_naming_what_is_missing(tmp_path, tokenizer):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    missing = "not a bigbird_dna export: missing tokenizer.json, model.safetensors or model.pt"
    with pytest.raises(InputError, match=missing):
        load_export(tmp_path / "run")
    path = write_export(tmp_path / "export", "mlm", _state(), MODEL_CONFIG, tokenizer)
    with pytest.raises(InputError, match="holds a 'mlm' model, but a 'promoter' model is needed"):
        load_export(path, task="promoter")


def test_rewriting_an_export_replaces_it_whole(tmp_path, tokenizer):
    path = write_export(tmp_path / "export", "mlm", _state(), MODEL_CONFIG, tokenizer, metadata={"v": 1})
    write_export(path, "mlm", _state(), MODEL_CONFIG, tokenizer, metadata={"v": 2})
    assert json.loads((path / "config.json").read_text())["metadata"]["v"] == 2
    assert [p.name for p in tmp_path.iterdir()] == ["export"]


def test_a_failure_mid_write_leaves_no_half_export_and_keeps_the_old_one(tmp_path, tokenizer, monkeypatch):
    def broken_save(path):
        raise OSError("disk full")

    monkeypatch.setattr(export_module, "hf_tokenizer_json", broken_save)  # fails after model.pt and config.json
    with pytest.raises(InputError, match="cannot write the export .*disk full"):
        write_export(tmp_path / "export", "mlm", _state(), MODEL_CONFIG, tokenizer)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    path = write_export(tmp_path / "export", "mlm", _state(), MODEL_CONFIG, tokenizer, metadata={"v": 1})

    def broken_torch_save(*args, **kwargs):
        raise OSError("io")

    monkeypatch.setattr(export_module.torch, "save", broken_torch_save)  # fails first, on model.pt
    with pytest.raises(InputError, match="cannot write the export .*io"):
        write_export(path, "mlm", _state(), MODEL_CONFIG, tokenizer, metadata={"v": 2})
    assert load_export(path).metadata["v"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["export"]
