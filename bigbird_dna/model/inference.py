"""Trained models rebuilt from an export for inference, without the training stack.

``predict`` and the :class:`~bigbird_dna.pretrained.BigBirdDNA` API (so ``embed``, ``variants`` and
``score`` too) run these plain ``nn.Module`` classes, not the tasks' Lightning modules. Importing
Lightning, and the torchmetrics it pulls in (which imports ``transformers``, ``scipy`` and
``matplotlib`` when they are installed), took about 5 of the 6.5 s that a CPU prediction spent
before its first batch.

Each class has the same ``encoder`` and ``head`` submodules as its task
(:class:`~bigbird_dna.tasks.classification.SequenceClassificationTask`,
:class:`~bigbird_dna.tasks.mlm.MLMTask`), so an export's ``encoder.*`` and ``head.*`` weights load
into either one unchanged, and :meth:`state_dict` gives back the same keys.
"""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import LAYOUTS_KEY, Export
from bigbird_dna.model.heads import ClassificationHead, MLMHead

SOFTMAX_TASKS = ("classify",)  # one class per sequence; every other classifier has independent labels


class SequenceClassifier(nn.Module):
    """Encoder + classification head: logits ``[B, num_labels]`` for ``[B, T]`` token ids.

    Args:
        config: the encoder's config.
        num_labels: outputs of the head.
        head: the head settings of the task config (``dropout``, ``hidden_size``, ``pooling``).
        softmax: one class per sequence (``task=classify``); False: independent sigmoid labels.
        class_names: the classes in output order (softmax classifiers), else None.
    """

    def __init__(self, config: EncoderConfig, num_labels: int, head: dict | None = None, softmax: bool = False,
                 class_names: list[str] | None = None):
        super().__init__()
        head = dict(head or {})
        self.config = config
        self.num_labels = num_labels
        self.softmax = softmax
        self.class_names = class_names
        self.encoder = BigBirdEncoder(config)
        self.head = ClassificationHead(config.hidden_size, num_labels, dropout=head.get("dropout", config.dropout),
                                       hidden_size=head.get("hidden_size"), pooling=head.get("pooling", "cls"))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, num_labels]`` for ``input_ids``/``attention_mask [B, T]`` (``None``: no
        padding; see :func:`~bigbird_dna.tokenizer.specials.padding_mask_or_none`). A ``cls`` head reads
        position 0 only, so the last layer computes that token alone (``BigBirdEncoder.forward``'s
        ``rows``): about a third less work for the tiny model, the same logits up to rounding."""
        if self.head.pool.pooling == "cls":
            cls_row = torch.zeros(1, dtype=torch.long, device=input_ids.device)
            return self.head(self.encoder(input_ids, attention_mask, rows=cls_row))
        return self.head(self.encoder(input_ids, attention_mask), attention_mask)

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, num_labels]`` -> float32 probabilities: a softmax over the classes, or
        independent sigmoids."""
        logits = logits.float()
        return torch.softmax(logits, dim=-1) if self.softmax else torch.sigmoid(logits)

    @torch.inference_mode()
    def predict_proba(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Probabilities ``[B, num_labels]`` (float32)."""
        return self.probabilities(self(input_ids, attention_mask))


class MaskedLanguageModel(nn.Module):
    """Encoder + masked-token head (decoder tied to the token embeddings): logits ``[B, T, vocab]``."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.encoder = BigBirdEncoder(config)
        self.head = MLMHead(config, self.encoder.token_embedding)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, T, vocab]`` for every position (``attention_mask`` None: no padding)."""
        return self.head(self.encoder(input_ids, attention_mask))


def _loaded(module: nn.Module, export: Export) -> nn.Module:
    """``module`` with the export's ``encoder.*`` and ``head.*`` weights (all of them), in eval mode.

    A folder without pinned layouts (saved by ``transformers`` before its ``save_pretrained`` kept
    them) regenerates them from ``model.attention``'s seed, as ``transformers`` does.
    """
    state = {k: v for k, v in export.state_dict.items() if k.startswith(("encoder.", "head."))}
    state.setdefault(LAYOUTS_KEY, {})
    module.load_state_dict(state)
    return module.eval()


def classifier_from_export(export: Export) -> SequenceClassifier:
    """Rebuild a trained classifier, in eval mode, from a loaded export.

    ``num_labels`` comes from the head's weights, the head settings from the export's task config,
    so any task with a classification head reloads this way; a ``classify`` export gives softmax
    outputs and its class names.
    """
    out = export.state_dict.get("head.out.weight")
    if out is None:
        raise InputError(f"{export.path} holds a '{export.task}' model without a classification head; "
                         "export a fine-tuned classifier (task=promoter, ...).")
    softmax = export.task in SOFTMAX_TASKS
    names = export.task_config.get("class_names") if softmax else None
    if softmax and names is None:
        names = [f"class_{j}" for j in range(out.shape[0])]
    module = SequenceClassifier(EncoderConfig.from_dict(dict(export.model_config)), out.shape[0],
                                head=export.task_config.get("head"), softmax=softmax,
                                class_names=[str(n) for n in names] if names is not None else None)
    return _loaded(module, export)


def model_from_export(export: Export) -> SequenceClassifier | MaskedLanguageModel:
    """The export's model in eval mode: a classifier when it has a head, else the MLM model."""
    if "head.out.weight" in export.state_dict:
        return classifier_from_export(export)
    if export.task != "mlm":
        raise InputError(f"{export.path} holds a '{export.task}' model with neither a classification head "
                         "nor an MLM head; export a classifier or an MLM model.")
    return _loaded(MaskedLanguageModel(EncoderConfig.from_dict(dict(export.model_config))), export)
