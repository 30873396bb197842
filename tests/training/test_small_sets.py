"""Small labelled sets (``task.schedule.min_steps``, ``min_val_sequences`` and the small-set recipe):
enough optimizer steps, an encoder that learns slower than its head, and no early stopping or
checkpoint choice on a handful of validation sequences."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.model.export import load_export
from bigbird_dna.tasks.base import checkpoint_rows
from bigbird_dna.training.small_sets import plan_small_set, summary_entry
from tests.conftest import LAMBDA


def test_a_small_training_set_trains_more_epochs_and_validates_about_as_often_as_configured():
    plan = plan_small_set(train_sequences=90, val_sequences=10, batch_per_step=32, max_epochs=6, min_steps=600,
                          min_val_sequences=200)
    assert (plan.steps_per_epoch, plan.epochs, plan.validate_every, plan.keep_last) == (3, 200, 33, True)
    assert plan.epochs * plan.steps_per_epoch >= 600
    assert summary_entry(plan)["small_set"]["epochs"] == 200


def test_a_large_set_is_left_as_configured_and_null_turns_each_rule_off():
    plan = plan_small_set(6000, 1000, 32, 6, 600, 200)
    assert not plan.changes and summary_entry(plan) == {}
    assert plan_small_set(90, 10, 32, 6, None, None).changes is False
    assert plan_small_set(90, 10, 32, 6, 600, None).keep_last is False
    assert plan_small_set(90, 500, 32, 6, 600, 200).keep_last is False
    # per step: batch x devices x accumulation; the short last batch of an epoch is a step too
    assert plan_small_set(100, 500, 64, 1, 10, None).steps_per_epoch == 2


def test_the_summary_names_the_checkpoint_it_tested():
    small = {"train_sequences": 90, "val_sequences": 10, "steps_per_epoch": 3, "epochs": 200,
             "validate_every": 33, "keep_last": True}
    rows = dict(checkpoint_rows({"best_checkpoint": "run/checkpoints/last.ckpt", "small_set": small}))
    assert rows["small training set"] == ("90 sequences: 200 epochs of 3 steps (task.schedule.min_steps or "
                                          "small_min_steps)")
    tested = rows["last checkpoint"]
    assert tested.startswith("run/checkpoints/last.ckpt") and "10 validation sequences" in tested
    assert checkpoint_rows({"best_checkpoint": "b.ckpt"}) == [("best checkpoint", "b.ckpt")]
    rows = dict(checkpoint_rows({"best_checkpoint": "b.ckpt", "small_set": {**small, "layer_decay": 0.1}}))
    assert rows["small-set layer decay"].startswith("0.1  (optim.layer_decay for 90 training sequences)")


def test_the_small_set_recipe_applies_below_its_size_only():
    recipe = {"small_train_sequences": 500, "small_min_steps": 600, "small_layer_decay": 0.1,
              "small_encoder_dropout": 0.2}
    small = plan_small_set(90, 10, 32, 6, None, 200, **recipe)
    assert (small.layer_decay, small.epochs * small.steps_per_epoch >= 600, small.keep_last) == (0.1, True, True)
    assert small.encoder_dropout == 0.2
    assert plan_small_set(90, 10, 32, 6, 900, 200, **recipe).epochs == 300, "the larger of min_steps counts"
    large = plan_small_set(500, 1000, 32, 6, None, 200, **recipe)
    assert (large.layer_decay, large.encoder_dropout, large.epochs, large.changes) == (None, None, None, False)
    assert plan_small_set(90, 10, 32, 6, None, 200, None, 600, 0.1).layer_decay is None, "null: the recipe is off"


@pytest.fixture
def forty_sequences(tmp_path):
    """40 windows of lambda, half labelled 1 (no signal: only the schedule is tested)."""
    genome = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])
    table = tmp_path / "small.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{genome[i * 150:i * 150 + 120]}\t{i % 2}\n" for i in range(40)))
    return table


def test_a_run_on_40_sequences_takes_min_steps_and_tests_and_exports_its_last_state(forty_sequences,
                                                                                     train_in_process):
    summary, run_dir = train_in_process(
        "task=promoter", "data=promoter_labelled", f"data.train={forty_sequences}", "data.val_fraction=0.25",
        "data.batch_size=8", "data.num_workers=0", "data.baselines.enabled=false", "trainer.max_steps=-1",
        "trainer.max_epochs=2", "trainer.val_check_interval=1.0", "trainer.check_val_every_n_epoch=1",
        "task.schedule.patience=1", "task.schedule.min_steps=12", "task.schedule.min_val_sequences=200",
        "task.schedule.small_min_steps=16", "task.schedule.small_layer_decay=0.5",
        "task.schedule.small_encoder_dropout=0.3", "task.encoder_dropout=0")
    # 30 train sequences, 4 steps per epoch: 2 epochs would be 8 steps; 4 epochs make 16
    assert summary["small_set"] == {"train_sequences": 30, "val_sequences": 10, "steps_per_epoch": 4, "epochs": 4,
                                    "validate_every": 2, "keep_last": True, "layer_decay": 0.5,
                                    "encoder_dropout": 0.3}
    assert summary["global_step"] == 16, "early stopping is off: the whole stretched schedule ran"
    assert summary["best_checkpoint"].endswith("last.ckpt")
    export = load_export(run_dir / "export")
    assert export.metadata["source_checkpoint"] == "checkpoints/last.ckpt"
    assert export.model_config["dropout"] == 0.3, "the small set trained with the recipe's encoder dropout"
    state = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert state["hyper_parameters"]["optim"]["layer_decay"] == 0.5
    rates = sorted({group["initial_lr"] for group in state["optimizer_states"][0]["param_groups"]}, reverse=True)
    assert rates[:3] == pytest.approx([2e-3, 1e-3, 5e-4]), "each layer below the head at half the rate above"
