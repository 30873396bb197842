"""What a model's head outputs and how its numbers are read: the one place that decides it.

An **output kind** says what the logits mean:

- ``sigmoid``: independent labels, one probability each (promoter: one label; chromatin
  profiles: 919). ``transformers`` calls it ``multi_label_classification``.
- ``softmax``: exactly one class per sequence, probabilities that sum to 1 (``classify``);
  ``single_label_classification``.
- ``masked_lm``: a distribution over the vocabulary at every position (MLM pretraining).

A :class:`ModelOutput` is a kind plus the names of the output columns (class or label names; none
for ``masked_lm``). The training task decides it, and the export records it as ``config.json``'s
``"output": {"kind": ..., "names": [...]}``; everything downstream (``predict``, ``BigBirdDNA``,
the ``transformers`` classes, the model card, variant scores) reads it from there and never from
the task's name. Exports written before that key existed are read by :func:`read_output` from their
weights and task settings: a classification head (``head.out``) whose task settings name classes
(``class_names``) is ``softmax``, any other classification head ``sigmoid``, an MLM head (``head.bias``
without ``head.out``) ``masked_lm``.

A new kind (a regression head, per-token labels) is one more :class:`OutputKind` in :data:`KINDS`
(its activation, loss and names for other tools), with its metrics (:mod:`bigbird_dna.evaluation.metrics`)
and its predictor (:mod:`bigbird_dna.inference.predictors`); the generic classification task trains
it (``task.output_kind``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
import torch.nn.functional as F

from bigbird_dna.errors import InputError

Loss = Callable[[torch.Tensor, torch.Tensor, "torch.Tensor | None"], torch.Tensor]


def _bce(logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Mean BCE-with-logits over all ``[B, C]`` entries; ``weight``: the positives' weight."""
    return F.binary_cross_entropy_with_logits(logits, labels, pos_weight=weight)


def _cross_entropy(logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Cross-entropy of logits ``[B, C]`` against one-hot labels ``[B, C]``; ``weight``: per class ``[C]``."""
    return F.cross_entropy(logits, labels.argmax(dim=-1), weight=weight)


def _token_cross_entropy(logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
    """Cross-entropy of logits ``[N, vocab]`` against token ids ``[N]`` (-100: not scored)."""
    return F.cross_entropy(logits, labels, weight=weight, ignore_index=-100)


@dataclass(frozen=True)
class OutputKind:
    """How logits become probabilities and a loss, and how other tools name this kind of output.

    Attributes:
        name: the kind's name in ``config.json``.
        activation: logits ``[..., C]`` -> float32 probabilities ``[..., C]``.
        loss_function: ``(logits, labels, weight or None) -> mean loss`` (see :meth:`loss`).
        hf_problem_type: ``transformers``' ``config.problem_type`` (``None``: not a classifier).
        hf_architecture: the class of ``hf/modeling_bigbird_dna.py`` that carries this head.
        pipeline_tag: the model card's Hub pipeline tag.
    """

    name: str
    activation: Callable[[torch.Tensor], torch.Tensor] = field(repr=False)
    loss_function: Loss = field(repr=False)
    hf_problem_type: str | None
    hf_architecture: str
    pipeline_tag: str | None

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """Logits ``[..., C]`` -> float32 probabilities ``[..., C]``."""
        return self.activation(logits.float())

    def loss(self, logits: torch.Tensor, labels: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        """The training loss of float32 logits: ``sigmoid`` BCE against 0/1 labels ``[B, C]`` (``weight``:
        the positives' weight), ``softmax`` cross-entropy against one-hot labels ``[B, C]`` (``weight``:
        per class), ``masked_lm`` cross-entropy against token ids."""
        return self.loss_function(logits.float(), labels, weight)

    @property
    def classifies(self) -> bool:
        """A sequence-level head with one output column per name (not a token distribution)."""
        return self.hf_problem_type is not None


def _softmax(logits: torch.Tensor) -> torch.Tensor:
    return torch.softmax(logits, dim=-1)


SIGMOID = OutputKind("sigmoid", torch.sigmoid, _bce, "multi_label_classification",
                     "BigBirdDNAForSequenceClassification", "text-classification")
SOFTMAX = OutputKind("softmax", _softmax, _cross_entropy, "single_label_classification",
                     "BigBirdDNAForSequenceClassification", "text-classification")
MASKED_LM = OutputKind("masked_lm", _softmax, _token_cross_entropy, None, "BigBirdDNAForMaskedLM", "fill-mask")
KINDS = {kind.name: kind for kind in (SIGMOID, SOFTMAX, MASKED_LM)}


@dataclass(frozen=True)
class ModelOutput:
    """A model's output: its kind and the names of its columns, in output order."""

    kind: OutputKind
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind.classifies and not self.names:
            raise InputError(f"a {self.kind.name} output needs at least one output name.")
        if self.kind is SOFTMAX and len(self.names) < 2:
            raise InputError(f"a softmax output needs at least 2 classes, not {list(self.names)}.")

    @property
    def num_outputs(self) -> int:
        """Output columns (0 for ``masked_lm``)."""
        return len(self.names)

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., "names": [...]}``, as ``config.json`` records it."""
        return {"kind": self.kind.name, "names": list(self.names)}

    @classmethod
    def from_dict(cls, value: dict[str, Any]) -> "ModelOutput":
        kind = KINDS.get(value.get("kind"))
        if kind is None:
            raise InputError(f"unknown output kind {value.get('kind')!r} in config.json; known: {sorted(KINDS)}. "
                             "The export needs a newer bigbird_dna.")
        return cls(kind, tuple(str(name) for name in value.get("names") or ()))


def default_names(prefix: str, count: int) -> tuple[str, ...]:
    """``prefix_0 .. prefix_<count-1>``: names of outputs that were never named."""
    return tuple(f"{prefix}_{j}" for j in range(count))


def read_names(path: str | os.PathLike, count: int) -> list[str]:
    """One name per line of a text file (e.g. DeepSEA's ``cell|assay|treatment`` feature names).

    Raises:
        InputError: a missing file, or a name count other than ``count``.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"label names file not found: {path}. Set task.label_names to a file with one name "
                         "per line, or null.")
    names = [line.strip() for line in path.read_text().splitlines() if line.strip()]
    if len(names) != count:
        raise InputError(f"{path} names {len(names)} labels, but task.num_labels={count}; give one name "
                         "per label, in label order.")
    return names


def _recorded_names(task_config: dict[str, Any], key: str, count: int) -> tuple[str, ...] | None:
    """Names an older export kept in its task settings: a list, or (chromatin runs before the names
    were saved) the path of a names file, read if it is still there."""
    names = task_config.get(key)
    if isinstance(names, list) and len(names) == count:
        return tuple(str(name) for name in names)
    if isinstance(names, str) and Path(names).is_file():
        return tuple(read_names(names, count))
    return None


def read_output(config: dict[str, Any], state_dict: dict[str, Any]) -> ModelOutput | None:
    """The output an export's ``config.json`` records, or, for exports written before it did, the
    one its weights and task settings imply (module docstring); ``None`` for an encoder alone."""
    if config.get("output"):
        return ModelOutput.from_dict(config["output"])
    task_config = config.get("task_config") or {}
    head = state_dict.get("head.out.weight")
    if head is not None:
        count = head.shape[0]
        if task_config.get("class_names") is not None:
            names = _recorded_names(task_config, "class_names", count)
            return ModelOutput(SOFTMAX, names or default_names("class", count))
        names = _recorded_names(task_config, "label_names", count)
        if names is None:  # one unnamed label is the task's own (a promoter model's "promoter")
            names = (str(config.get("task")),) if count == 1 else default_names("label", count)
        return ModelOutput(SIGMOID, names)
    if "head.bias" in state_dict:
        return ModelOutput(MASKED_LM)
    return None
