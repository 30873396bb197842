"""``task.schedule.ema_decay``: the weights' exponential moving average is what a labelled run
validates, keeps as its best checkpoint, tests and exports; a resumed run continues both."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import load_export
from bigbird_dna.tasks.promoter import PromoterTask
from bigbird_dna.training.weight_averaging import _ema, weight_averaging
from tests.conftest import LAMBDA

SCHEDULE = ("task=promoter", "data=promoter_labelled", "data.val_fraction=0.25", "data.batch_size=8",
            "data.num_workers=0", "data.baselines.enabled=false", "trainer.max_steps=-1", "trainer.max_epochs=3",
            "trainer.val_check_interval=1.0", "trainer.check_val_every_n_epoch=1", "task.schedule.patience=5",
            "task.schedule.min_val_sequences=1", "task.schedule.small_train_sequences=null", "optim.lr=5e-3")


@pytest.fixture
def labelled(tmp_path):
    """48 windows of lambda, labelled by their GC share (a signal the model can learn in a few steps)."""
    genome = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])
    windows = [genome[i * 160:i * 160 + 120] for i in range(48)]
    median = sorted(w.count("G") + w.count("C") for w in windows)[24]
    table = tmp_path / "labelled.tsv"
    table.write_text("sequence\tlabel\n" + "".join(
        f"{w}\t{int(w.count('G') + w.count('C') >= median)}\n" for w in windows))
    return table


def test_no_decay_no_callback_and_a_decay_outside_0_1_is_refused():
    assert weight_averaging(None) is None
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(InputError, match=f"task.schedule.ema_decay={bad}"):
            weight_averaging(bad)


def test_the_average_moves_one_minus_decay_toward_the_weights_and_copies_counters():
    average = _ema(0.9)
    assert torch.allclose(average(torch.zeros(3), torch.ones(3), torch.tensor(5)), torch.full((3,), 0.1))
    assert average(torch.tensor(2), torch.tensor(7), torch.tensor(5)).item() == 7


def test_the_best_checkpoint_holds_the_average_and_validate_test_and_export_read_it(labelled, train_in_process,
                                                                                     monkeypatch):
    seen = {}  # the weights each stage ran on, as its first batch saw them

    def remember(stage):
        def hook(module):
            seen[stage] = {k: v.detach().clone() for k, v in module.state_dict().items() if isinstance(v, torch.Tensor)}
        return hook

    monkeypatch.setattr(PromoterTask, "on_test_start", remember("test"), raising=False)
    summary, run_dir = train_in_process(*SCHEDULE, f"data.train={labelled}", f"data.test={labelled}",
                                        "task.schedule.ema_decay=0.5")
    best = torch.load(summary["best_checkpoint"], map_location="cpu", weights_only=False)
    averaged, raw = best["state_dict"], best["current_model_state"]
    assert averaged.keys() == raw.keys()
    tensors = [k for k in averaged if isinstance(averaged[k], torch.Tensor) and averaged[k].is_floating_point()]
    assert any(not torch.equal(averaged[k], raw[k]) for k in tensors), "the average differs from the raw weights"
    # The final validation loads the best checkpoint: it must score what early stopping saw (the average).
    scores = [c for c in best["callbacks"].values() if "best_model_score" in c]
    assert summary["val/auroc"] == pytest.approx(float(scores[0]["best_model_score"]), abs=1e-6)
    assert all(torch.equal(seen["test"][k], averaged[k]) for k in tensors), "the test ran on the average"
    exported = load_export(run_dir / "export").state_dict
    shared = [k for k in tensors if k in exported]
    assert shared and all(torch.equal(exported[k], averaged[k]) for k in shared), "the export is the average"


def test_a_run_without_a_decay_keeps_plain_checkpoints(labelled, train_in_process):
    summary, _ = train_in_process(*SCHEDULE, f"data.train={labelled}", "trainer.max_epochs=1")
    assert "current_model_state" not in torch.load(summary["best_checkpoint"], map_location="cpu", weights_only=False)


def test_a_resumed_run_continues_the_average_and_the_raw_weights(labelled, train_in_process, tmp_path):
    run_dir = tmp_path / "resumed"
    first, _ = train_in_process(*SCHEDULE, f"data.train={labelled}", "task.schedule.ema_decay=0.5",
                                "trainer.max_epochs=1", run_dir=run_dir)
    saved = torch.load(first["last_checkpoint"], map_location="cpu", weights_only=False)
    second, _ = train_in_process(*SCHEDULE, f"data.train={labelled}", "task.schedule.ema_decay=0.5",
                                 "trainer.max_epochs=2", "ckpt_path=last", run_dir=run_dir)
    assert second["global_step"] == 2 * first["global_step"]
    resumed = torch.load(second["last_checkpoint"], map_location="cpu", weights_only=False)
    assert "current_model_state" in resumed and resumed["averaging_state"]["n_averaged"] > saved["averaging_state"][
        "n_averaged"]
