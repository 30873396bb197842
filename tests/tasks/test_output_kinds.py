"""The classification task is generic over the output kind: the kind gives the probabilities, the
loss and the metrics (model/outputs.py, evaluation/metrics.py), with no task of its own."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.outputs import SIGMOID, SOFTMAX
from bigbird_dna.tasks.classification import SequenceClassificationTask
from tests.promoter.conftest import TINY_MODEL

MODEL = {**TINY_MODEL, "vocab_size": 16}
LOGITS = torch.tensor([[2.0, 0.0, -1.0], [0.0, 3.0, 0.0], [0.5, 0.2, 2.0], [-1.0, 1.0, 0.0]])
ONE_HOT = torch.tensor([[1.0, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]])


def test_a_softmax_output_by_config_trains_with_cross_entropy_and_reports_multiclass_metrics():
    task = SequenceClassificationTask(MODEL, {}, num_labels=3, output_kind="softmax")
    assert task.output.kind is SOFTMAX and task.output.names == ("label_0", "label_1", "label_2")
    assert torch.allclose(task.probabilities(LOGITS), torch.softmax(LOGITS, -1))
    assert torch.isclose(task.loss(LOGITS, ONE_HOT), torch.nn.functional.cross_entropy(LOGITS, ONE_HOT.argmax(1)))
    metrics = task.compute_metrics(task.probabilities(LOGITS), ONE_HOT.long())
    assert {"accuracy", "macro_f1", "macro_auroc", "auroc_class0"} <= metrics.keys()
    assert float(metrics["accuracy"]) == 1.0


def test_the_default_sigmoid_output_uses_bce_with_the_positive_weight():
    task = SequenceClassificationTask(MODEL, {}, num_labels=3, pos_weight=4.0)
    assert task.output.kind is SIGMOID
    expected = torch.nn.functional.binary_cross_entropy_with_logits(LOGITS, ONE_HOT, pos_weight=torch.tensor(4.0))
    assert torch.isclose(task.loss(LOGITS, ONE_HOT), expected)
    metrics = task.compute_metrics(torch.sigmoid(LOGITS), ONE_HOT.long())
    assert {"auroc", "auroc_median", "labels_scored"} <= metrics.keys()


def test_an_unknown_output_kind_is_refused():
    with pytest.raises(InputError, match="task.output_kind='regression' is not one of"):
        SequenceClassificationTask(MODEL, {}, num_labels=1, output_kind="regression")
