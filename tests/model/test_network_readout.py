"""``task.network_readout``: the network's own read-out of the labels trains only while a fitted
composition path is kept, leaves every other run exactly as it was, and is not exported."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import load_export
from tests.model.test_composition_fit import gc_labelled  # noqa: F401 (a fixture)
from tests.training.test_weight_averaging import SCHEDULE

FIT_FIRST = ("tokenizer=char", "task.head.composition=3", "task.head.composition_fit=first",
             "data.val_fraction=0.34", "task.composition_judge=chance")


def last_state(summary: dict) -> dict[str, torch.Tensor]:
    state = torch.load(summary["last_checkpoint"], map_location="cpu", weights_only=False)["state_dict"]
    return {k: v for k, v in state.items() if torch.is_tensor(v)}


def test_the_readout_trains_only_beside_a_kept_path_and_otherwise_leaves_the_run_as_it_was(
        gc_labelled, train_in_process, tmp_path):  # noqa: F811
    def run(name: str, *overrides: str) -> tuple[dict[str, torch.Tensor], object]:
        summary, run_dir = train_in_process(*SCHEDULE, f"data.train={gc_labelled}", "tokenizer=char",
                                            "trainer.max_epochs=1", *overrides, run_dir=tmp_path / name)
        return last_state(summary), run_dir

    kept, kept_dir = run("kept", *FIT_FIRST, "task.network_readout=1.0")
    assert kept["head.composition.weight"].abs().sum() > 0  # the path was kept (the LR scores GC exactly)
    without, _ = run("none", "task.head.composition=0", "task.network_readout=0")
    idle, _ = run("idle", "task.head.composition=0", "task.network_readout=1.0")
    # no kept path: nothing moved differently from the run without a read-out (its initialisation
    # drew apart from the run's random numbers; it gave no gradient and stayed out of the norm)
    assert without.keys() == {k for k in idle if not k.startswith("network_readout.")}
    for key, value in without.items():
        assert torch.equal(value, idle[key]), key
    # the same draw of the read-out (the fitted path draws no random numbers): it learnt beside the
    # kept path and only decayed without one
    assert (kept["network_readout.weight"] - idle["network_readout.weight"]).abs().max() > 0.05
    exported = load_export(kept_dir / "export")
    assert not [k for k in exported.state_dict if k.startswith("network_readout.")]


def test_a_negative_weight_is_refused():
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from tests.model.test_hybrid_exports import MODEL

    with pytest.raises(InputError, match="task.network_readout=-1"):
        SequenceClassificationTask({**MODEL, "vocab_size": 9, "pad_id": 0}, {}, network_readout=-1)
