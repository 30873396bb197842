"""A run started by an older version resumes: its config.yaml is read through the renames."""

from __future__ import annotations

from omegaconf import OmegaConf

from bigbird_dna.training import config_history
from bigbird_dna.training.config_history import upgrade_saved_config
from bigbird_dna.training.run_record import saved_config_of


def test_removed_keys_are_dropped_and_moved_targets_renamed(tmp_path, monkeypatch):
    monkeypatch.setattr(config_history, "MOVED_TARGETS", {"old.module.Data": "new.module.Data"})
    saved = OmegaConf.create({"task": {"_target_": "bigbird_dna.tasks.mlm.MLMTask", "mask_prob": 0.3},
                              "data": {"_target_": "old.module.Data", "mask_prob": 0.3, "uppercase": True},
                              "model": {"hidden_size": 8}})
    upgraded = upgrade_saved_config(saved)
    assert "mask_prob" not in upgraded.task and "uppercase" not in upgraded.data
    assert upgraded.data.mask_prob == 0.3 and upgraded.data._target_ == "new.module.Data"
    assert upgraded.model.hidden_size == 8


def test_callbacks_of_the_runtime_package_are_found_in_training():
    saved = OmegaConf.create({"callbacks": {"rng": {"_target_": "bigbird_dna.runtime.faults.RNGState"},
                                            "mine": {"_target_": "my.own.Callback"}}})
    upgraded = upgrade_saved_config(saved)
    assert upgraded.callbacks.rng._target_ == "bigbird_dna.training.faults.RNGState"
    assert upgraded.callbacks.mine._target_ == "my.own.Callback"


def test_a_checkpoints_saved_config_is_read_upgraded(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    OmegaConf.save({"task": {"mask_prob": 0.15}, "data": {"uppercase": True, "window_bp": 64}}, run / "config.yaml")
    path, saved = saved_config_of(run / "checkpoints" / "last.ckpt")
    assert path == run / "config.yaml" and "mask_prob" not in saved.task and dict(saved.data) == {"window_bp": 64}
