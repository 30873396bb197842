"""``task.encoder_dropout``: the encoder's dropout while a classifier trains, over ``model.dropout``."""

from __future__ import annotations

import pytest
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.tasks.classification import SequenceClassificationTask
from tests.model.test_hybrid_exports import MODEL

ENCODER = {**MODEL, "vocab_size": 9, "pad_id": 0, "dropout": 0.1}


def dropouts(module: nn.Module) -> set[float]:
    return {m.p for m in module.encoder.modules() if isinstance(m, nn.Dropout)}


def test_encoder_dropout_replaces_the_models_in_every_encoder_layer_and_null_keeps_it():
    assert dropouts(SequenceClassificationTask(ENCODER, {})) == {0.1}
    task = SequenceClassificationTask(ENCODER, {}, encoder_dropout=0)
    assert task.config.dropout == 0.0 and dropouts(task) == {0.0}
    assert task.hparams.model["dropout"] == 0.1, "the model config as given stays a hyperparameter"


@pytest.mark.parametrize("bad", [-0.1, 1.0])
def test_an_encoder_dropout_outside_0_1_is_refused(bad):
    with pytest.raises(InputError, match=f"task.encoder_dropout={bad}"):
        SequenceClassificationTask(ENCODER, {}, encoder_dropout=bad)


def test_set_encoder_dropout_reaches_every_encoder_dropout_and_the_config_but_not_the_head():
    task = SequenceClassificationTask(ENCODER, {}, head={"dropout": 0.1}, encoder_dropout=0)
    task.set_encoder_dropout(0.3)
    assert dropouts(task) == {0.3} and task.config.dropout == 0.3 and task.encoder.config.dropout == 0.3
    assert {m.p for m in task.head.modules() if isinstance(m, nn.Dropout)} == {0.1}


def test_a_small_set_dropout_outside_0_1_is_refused_before_training():
    with pytest.raises(InputError, match="task.schedule.small_encoder_dropout=1.5"):
        SequenceClassificationTask(ENCODER, {}).set_encoder_dropout(1.5)
