"""``experiment=pretrain_gpu`` composes into the intended GPU recipe: its model shape and settings,
and the same genome, split and scoring as ``experiment=pretrain_cpu`` (so the numbers compare)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from bigbird_dna.model.config import EncoderConfig
from tests.conftest import compose


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


def _plain(overrides: list[str], tmp_path) -> dict:
    return OmegaConf.to_container(compose(overrides, tmp_path / "run"), resolve=True)


def test_the_model_is_an_8_by_512_bigbird_over_4096_token_windows(tmp_path):
    cfg = _plain(["experiment=pretrain_gpu"], tmp_path)
    model = cfg["model"]
    assert {k: model[k] for k in ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions",
                                  "position", "conv_kernel", "checkpoint_layers")} == {
        "hidden_size": 512, "num_layers": 8, "num_heads": 8, "intermediate_size": 2048, "max_positions": 4096,
        "position": "rope", "conv_kernel": 9, "checkpoint_layers": False}
    assert model["attention"]["preset"] == "bigbird_itc" and model["attention"]["block_size"] == 64
    assert model["attention"]["backend"] == "triton"
    assert cfg["tokenizer"]["kind"] == "char"
    # char tokens: the window plus [CLS] and [SEP] fills the context exactly, in whole blocks
    assert cfg["data"]["window_bp"] + 2 == model["max_positions"]
    assert model["max_positions"] % model["attention"]["block_size"] == 0
    config = EncoderConfig.from_dict({**model, "vocab_size": 16})
    assert config.head_dim == 64


def test_the_encoder_has_about_27m_parameters(tmp_path):
    from bigbird_dna.model.encoder import BigBirdEncoder

    model = _plain(["experiment=pretrain_gpu"], tmp_path)["model"]
    encoder = BigBirdEncoder(EncoderConfig.from_dict({**model, "vocab_size": 16}))
    count = sum(p.numel() for p in encoder.parameters())
    assert 25e6 < count < 30e6, count


def test_training_settings_suit_one_gpu_and_resuming_in_calls(tmp_path):
    cfg = _plain(["experiment=pretrain_gpu"], tmp_path)
    trainer, data, optim = cfg["trainer"], cfg["data"], cfg["optim"]
    assert trainer["accelerator"] == "gpu" and trainer["precision"] == "bf16-mixed"
    assert trainer["devices"] == 1
    # the last step is validated (and written to last.ckpt) inside the fit, so it is a curve point
    assert trainer["max_steps"] % trainer["val_check_interval"] == 0
    assert trainer["val_check_interval"] % trainer["log_every_n_steps"] == 0
    # Lightning's Timer keeps its elapsed time in checkpoints: a per-call max_time would stop every resume
    assert trainer.get("max_time") is None
    # whole batches from every worker: an exact resume needs them (bigbird_dna/genome/windows.py)
    assert data["windows_per_epoch"] % (data["batch_size"] * data["num_workers"]) == 0
    assert data["batch_size"] == 16 and data["num_workers"] >= 1
    assert optim["lr"] == pytest.approx(6e-4) and optim["weight_decay"] == pytest.approx(0.1)
    assert 0 < optim["warmup_steps"] < 1
    assert cfg["callbacks"]["preemption"]["signals"] == ["SIGUSR1", "SIGTERM", "SIGINT"]
    assert cfg["callbacks"]["model_checkpoint"]["save_last"] is True


def test_same_genome_split_and_scoring_as_the_cpu_recipe(tmp_path):
    gpu = _plain(["experiment=pretrain_gpu"], tmp_path)
    cpu = _plain(["experiment=pretrain_cpu"], tmp_path)
    assert gpu["data"]["fasta"].endswith("h_pylori_F32.fa")
    for key in ("fasta", "holdout_fraction", "train_records", "val_records", "test_records", "eval_mask_prob",
                "eval_stride_bp", "max_n_fraction", "reverse_complement_prob", "mask_prob", "baseline_max_order"):
        assert gpu["data"][key] == cpu["data"][key], key
    assert gpu["task"] == cpu["task"]
    assert gpu["seed"] == cpu["seed"]
    assert gpu["data"]["eval_mask_prob"] == 0.15 and gpu["data"]["mask_prob"] == 0.3


def test_overrides_shrink_it_to_a_cpu_run(tmp_path):
    """The shrinking overrides the driver test uses compose and keep the recipe's other settings."""
    cfg = _plain(["experiment=pretrain_gpu", "model.hidden_size=32", "model.num_layers=2", "model.num_heads=2",
                  "model.attention.backend=torch", "trainer.accelerator=cpu", "trainer.precision=32-true"], tmp_path)
    assert cfg["model"]["hidden_size"] == 32 and cfg["model"]["attention"]["backend"] == "torch"
    assert cfg["trainer"]["accelerator"] == "cpu" and cfg["model"]["conv_kernel"] == 9


def test_the_cpu_recipe_pretrains_the_encoder_the_labelled_defaults_train_from_scratch(tmp_path):
    """A backbone from ``experiment=pretrain_cpu`` fine-tunes into the labelled defaults' own model
    (the hybrid encoder), for the 6000 steps whose bits/base the recipe's comment quotes."""
    cpu = _plain(["experiment=pretrain_cpu"], tmp_path)
    labelled = _plain(["task=promoter", "data=promoter_labelled"], tmp_path)
    assert cpu["model"] == labelled["model"] and cpu["model"]["stem"]["pool"] == 4
    assert cpu["trainer"]["max_steps"] == 6000 and cpu["tokenizer"] == labelled["tokenizer"]
