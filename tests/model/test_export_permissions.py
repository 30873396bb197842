"""Every file of an export follows the umask, model.safetensors included (safetensors creates it
0600), so a lab can share an export folder: written by training (write_hf_export), by
BigBirdDNA.save_pretrained and by the transformers classes' save_pretrained."""

from __future__ import annotations

import os
import stat

import pytest

from bigbird_dna import BigBirdDNA
from tests.conftest import REPO

LEGACY = REPO / "tests" / "files" / "legacy_exports"


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _modes(folder) -> dict[str, str]:
    return {path.name: oct(stat.S_IMODE(path.stat().st_mode)) for path in folder.iterdir() if path.is_file()}


def test_save_pretrained_files_are_0644_under_umask_022(tmp_path, umask_022):
    model = BigBirdDNA.from_pretrained(LEGACY / "classify", device="cpu")
    modes = _modes(model.save_pretrained(tmp_path / "saved"))
    assert "model.safetensors" in modes and set(modes.values()) == {"0o644"}, modes


def test_training_exports_follow_the_umask(tmp_path, umask_022):
    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.model.export import load_export

    export = load_export(LEGACY / "promoter")
    written = write_hf_export(tmp_path / "export", export.task, export.state_dict, export.model_config,
                              export.tokenizer, export.output, export.task_config, export.metadata)
    modes = _modes(written)
    assert "model.safetensors" in modes and set(modes.values()) == {"0o644"}, modes
    os.umask(0o077)  # a private umask gives private files
    private = _modes(write_hf_export(tmp_path / "private", export.task, export.state_dict, export.model_config,
                                     export.tokenizer, export.output, export.task_config, export.metadata))
    assert set(private.values()) == {"0o600"}, private


def test_transformers_save_pretrained_follows_the_umask(tmp_path, umask_022):
    transformers = pytest.importorskip("transformers")
    fresh = BigBirdDNA.from_pretrained(LEGACY / "promoter", device="cpu").save_pretrained(tmp_path / "export")
    model = transformers.AutoModelForSequenceClassification.from_pretrained(fresh, trust_remote_code=True)
    model.save_pretrained(tmp_path / "hf")
    assert _modes(tmp_path / "hf")["model.safetensors"] == "0o644"
