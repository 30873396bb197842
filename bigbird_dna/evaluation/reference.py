"""Which baselines a run's data gets, scored on the same held-out bases or sequences as the model:

- genome MLM data (:class:`~bigbird_dna.data.mlm.datamodule.GenomeMLMDataModule`): the train
  unigram and the causal and bidirectional k-mer chains (:mod:`.mlm_baselines`);
- labelled data (:class:`~bigbird_dna.data.labelled.LabelledDataModule`: promoters, classes,
  chromatin profiles): a k-mer logistic regression and a small CNN (:mod:`.baselines`), with the
  ``data.baselines`` settings.

``train`` checks the settings when it builds the data (:func:`check_settings`), and scores the
baselines after the model's test (:func:`reference_metrics`), on one rank.
"""

from __future__ import annotations

from typing import Any

import torch

from bigbird_dna.data.labelled import LabelledDataModule
from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.evaluation.baselines import baseline_settings, run_baselines
from bigbird_dna.evaluation.baselines.cnn import CNNResult
from bigbird_dna.evaluation.mlm_baselines import chain_metrics


def check_settings(datamodule: Any) -> None:
    """Refuse a bad ``data.baselines`` before training, not after it (:class:`InputError`)."""
    if isinstance(datamodule, LabelledDataModule):
        baseline_settings(datamodule.baselines)


def reads_both_strands(datamodule: Any) -> bool:
    """Whether the model reads both strands of ``datamodule``'s sequences: True when the data flips
    them in training or averages them in evaluation (chromatin data always scores both), False for
    oriented data. The baselines read strands so too (the CNN's strands, the k-mer LR's canonical or
    oriented k-mers), and so does the head's fitted composition path."""
    return (getattr(datamodule, "reverse_complement_prob", 0.0) > 0
            or getattr(datamodule, "eval_reverse_complement", True))


def reference_metrics(datamodule: Any, device: torch.device | str = "cpu", cnn: CNNResult | None = None
                      ) -> dict[str, Any]:
    """The baselines' ``summary.json`` keys for ``datamodule`` (empty for data without baselines);
    labelled baselines train on ``device``. ``cnn``: the small CNN the run already trained (the
    composition path's judge), scored instead of trained again."""
    if isinstance(datamodule, GenomeMLMDataModule):
        return chain_metrics(datamodule)
    if isinstance(datamodule, LabelledDataModule):
        return run_baselines(datamodule.datasets, datamodule.label_kind, datamodule.baselines, device,
                             datamodule.seed, both_strands=reads_both_strands(datamodule), cnn=cnn)
    return {}
