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


def test_the_readout_trains_beside_a_kept_path_and_is_not_exported(gc_labelled, train_in_process, tmp_path):  # noqa: F811
    summary, run_dir = train_in_process(*SCHEDULE, f"data.train={gc_labelled}", *FIT_FIRST, "trainer.max_epochs=1",
                                        "task.network_readout=1.0", run_dir=tmp_path / "kept")
    state = last_state(summary)
    assert state["head.composition.weight"].abs().sum() > 0  # the path was kept (the LR scores GC exactly)
    assert state["network_readout.weight"].abs().sum() > 0  # it started at zero and learnt
    exported = load_export(run_dir / "export")
    assert not [k for k in exported.state_dict if k.startswith("network_readout.")]


def test_without_a_kept_path_the_run_is_the_same_as_without_a_readout(gc_labelled, train_in_process, tmp_path):  # noqa: F811
    runs = {}
    for weight in (0.0, 1.0):
        summary, _ = train_in_process(*SCHEDULE, f"data.train={gc_labelled}", "tokenizer=char", "trainer.max_epochs=1",
                                      "task.head.composition=0", f"task.network_readout={weight}",
                                      run_dir=tmp_path / f"readout{weight}")
        runs[weight] = last_state(summary)
    without, with_readout = runs[0.0], runs[1.0]
    assert with_readout["network_readout.weight"].abs().sum() == 0  # multiplied by zero: it never moved
    # nothing else moved differently: the read-out drew no random numbers and gave no gradient
    assert without.keys() == {k for k in with_readout if not k.startswith("network_readout.")}
    for key, value in without.items():
        assert torch.equal(value, with_readout[key]), key


def test_a_negative_weight_is_refused():
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from tests.model.test_hybrid_exports import MODEL

    with pytest.raises(InputError, match="task.network_readout=-1"):
        SequenceClassificationTask({**MODEL, "vocab_size": 9, "pad_id": 0}, {}, network_readout=-1)
