"""The composed networks: a BigBird encoder plus one head, assembled here and nowhere else.

:class:`ClassifierNetwork` (encoder + :class:`~bigbird_dna.model.heads.ClassificationHead`) and
:class:`MaskedLMNetwork` (encoder + :class:`~bigbird_dna.model.heads.MLMHead`, tied to the token
embedding) are mixins over ``nn.Module``: each host calls ``build_network`` in its ``__init__``, so
every host has the same ``encoder`` and ``head`` submodules (an export's ``encoder.*`` and
``head.*`` keys), the same forward and the same reading of its outputs (``self.output``,
:mod:`bigbird_dna.model.outputs`). The hosts are

- the plain modules here, :class:`SequenceClassifier` and :class:`MaskedLanguageModel`, which
  ``predict``, ``BigBirdDNA`` and the CLIs over it run (no Lightning: importing it and torchmetrics
  took most of a CPU prediction's start-up);
- the training tasks' LightningModules (:mod:`bigbird_dna.tasks`);
- the ``transformers`` classes every export carries (:mod:`bigbird_dna.hf`).

:func:`network_from_export` rebuilds the right plain module for any export.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from bigbird_dna.errors import InputError
from bigbird_dna.model.composition import resolve_composition
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import LAYOUTS_KEY, Export
from bigbird_dna.model.heads import ClassificationHead, MLMHead
from bigbird_dna.model.outputs import MASKED_LM, ModelOutput


class ClassifierNetwork:
    """Encoder + pooled classification head: logits ``[B, C]``, one column per output name.

    Mixed into an ``nn.Module`` host, whose ``__init__`` calls :meth:`build_network`. The host
    keeps its own ``config`` (the ``transformers`` classes' is their ``PretrainedConfig``).
    """

    output: ModelOutput
    encoder: BigBirdEncoder
    head: ClassificationHead

    def build_network(self, config: EncoderConfig, output: ModelOutput, head: dict[str, Any] | None = None,
                      encoder_class: type[BigBirdEncoder] = BigBirdEncoder) -> None:
        """Create ``self.encoder`` and ``self.head``.

        Args:
            config: the encoder's config.
            output: a classifying output (``sigmoid`` or ``softmax``): one logit per name.
            head: the head settings of the task config (``dropout``, ``hidden_size``, ``pooling``,
                ``read``, ``composition``, ``composition_fit``; exports without ``pooling`` pool ``cls``,
                those without ``read`` read ``bases``, those without ``composition`` have no
                composition path, those without ``composition_fit`` learnt it ``joint``).
            encoder_class: the encoder's class (the ``transformers`` wrapper uses a subclass).
        """
        if not output.kind.classifies:
            raise InputError(f"a classification head cannot give a {output.kind.name} output.")
        head = dict(head or {})
        self.output = output
        self.encoder = encoder_class(config)
        self.head = ClassificationHead(config.hidden_size, output.num_outputs,
                                       dropout=head.get("dropout", config.dropout),
                                       hidden_size=head.get("hidden_size"), pooling=head.get("pooling", "cls"),
                                       read=head.get("read", "bases"),
                                       composition=resolve_composition(head.get("composition"), None),
                                       composition_fit=head.get("composition_fit", "joint"))

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, C]`` for ``input_ids``/``attention_mask [B, T]`` (``None``: no padding; see
        :func:`~bigbird_dna.tokenizer.specials.padding_mask_or_none`).

        Outside training, a ``cls`` head reads position 0 only, so the last layer computes that
        token alone (``BigBirdEncoder.forward``'s ``rows``; a pooling stem still computes every
        token): about a third less work for the tiny model, the same logits up to rounding.
        Training runs the full pass.
        """
        if self.head.pool.pooling == "cls" and not self.head.training and not self.reads_tokens:
            cls_row = torch.zeros(1, dtype=torch.long, device=input_ids.device)
            return self.head(self.encoder(input_ids, attention_mask, rows=cls_row), input_ids=input_ids)
        return self.head.classify(self.pooled(input_ids, attention_mask), input_ids)

    @property
    def reads_tokens(self) -> bool:
        """True when the head pools the BigBird tokens of a pooling stem (``head.read=tokens``)."""
        return self.head.read == "tokens" and self.encoder.upsamples

    def pooled(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The head's pooled vector ``[B, head.pool.output_size]`` of the states ``head.read`` names.

        Reading tokens, the stem's upsampling path does not run. Its parameters are added times
        zero, so each one still has a (zero) gradient, as DDP requires of every parameter.
        """
        if not self.reads_tokens:
            return self.head.pool(self.encoder(input_ids, attention_mask), attention_mask)
        states, mask = self.encoder.token_states(input_ids, attention_mask)
        pooled = self.head.pool(states, mask)
        if torch.is_grad_enabled():
            pooled = pooled + 0.0 * sum(p.sum() for p in self.encoder.stem.decoder.parameters())
        return pooled

    def probabilities(self, logits: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, C]`` -> float32 probabilities, as the output kind reads them."""
        return self.output.kind.probabilities(logits)

    @torch.inference_mode()
    def predict_proba(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Probabilities ``[B, C]`` (float32)."""
        return self.probabilities(self.logits(input_ids, attention_mask))


class MaskedLMNetwork:
    """Encoder + masked-token head whose decoder is the token embedding: logits ``[..., vocab]``.

    Mixed into an ``nn.Module`` host, whose ``__init__`` calls :meth:`build_network`.
    """

    output: ModelOutput
    encoder: BigBirdEncoder
    head: MLMHead

    def build_network(self, config: EncoderConfig, encoder_class: type[BigBirdEncoder] = BigBirdEncoder) -> None:
        """Create ``self.encoder`` and ``self.head`` (tied to ``self.encoder.token_embedding``)."""
        self.output = ModelOutput(MASKED_LM)
        self.encoder = encoder_class(config)
        self.head = MLMHead(config, self.encoder.token_embedding)

    def logits(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, T, vocab]`` at every position (``attention_mask`` None: no padding)."""
        return self.head(self.encoder(input_ids, attention_mask))


class SequenceClassifier(ClassifierNetwork, nn.Module):
    """The plain classifier module: ``forward(input_ids, attention_mask) -> logits [B, C]``.

    Args: as :meth:`ClassifierNetwork.build_network`.
    """

    def __init__(self, config: EncoderConfig, output: ModelOutput, head: dict[str, Any] | None = None):
        super().__init__()
        self.config = config
        self.build_network(config, output, head)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.logits(input_ids, attention_mask)


class MaskedLanguageModel(MaskedLMNetwork, nn.Module):
    """The plain MLM module: ``forward(input_ids, attention_mask) -> logits [B, T, vocab]``."""

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.build_network(config)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        return self.logits(input_ids, attention_mask)


def network_from_export(export: Export) -> SequenceClassifier | MaskedLanguageModel:
    """The export's network in eval mode, with all of its ``encoder.*`` and ``head.*`` weights.

    A folder without pinned layouts (saved by ``transformers`` before its ``save_pretrained`` kept
    them) regenerates them from ``model.attention``'s seed, as ``transformers`` does.

    Raises:
        InputError: the export holds an encoder without a head.
    """
    config = EncoderConfig.from_dict(dict(export.model_config))
    if export.output is None:
        raise InputError(f"{export.path} holds a '{export.task}' encoder without a head; export a fine-tuned "
                         "classifier or an MLM model.")
    if export.output.kind is MASKED_LM:
        module: nn.Module = MaskedLanguageModel(config)
    else:
        module = SequenceClassifier(config, export.output, head=export.task_config.get("head"))
    state = {k: v for k, v in export.state_dict.items() if k.startswith(("encoder.", "head."))}
    state.setdefault(LAYOUTS_KEY, {})
    module.load_state_dict(state)
    return module.eval()
