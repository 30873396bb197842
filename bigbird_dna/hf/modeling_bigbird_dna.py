"""``transformers`` model classes over a bigbird_dna export: ``AutoModel``,
``AutoModelForMaskedLM`` and ``AutoModelForSequenceClassification`` with ``trust_remote_code=True``.

**Why this file imports the installed ``bigbird_dna``** instead of carrying its own copy of the
model: the encoder runs on the package's block-sparse attention (Triton kernels on CUDA, the
PyTorch backend elsewhere), layout presets and pinned-layout registry, several thousand lines that
a self-contained copy would have to duplicate and keep in step. The classes here are thin
wrappers: the same composed networks as the training tasks and :class:`bigbird_dna.BigBirdDNA`
(:mod:`bigbird_dna.model.networks`), under the same attribute names (``encoder``, ``head``), so an
export's ``model.safetensors`` keys are this model's ``state_dict`` keys and outputs equal
:class:`bigbird_dna.BigBirdDNA`'s. So
``pip install bigbird_dna`` is needed wherever the export is loaded.

**Pinned layouts.** The attention layouts a model trained on travel in ``model.safetensors`` as
``encoder._extra_state::...`` tensors. ``transformers`` handles tensors only, so here the encoder
keeps its layouts out of its ``state_dict`` (:class:`_Encoder`) and
:meth:`~BigBirdDNAPreTrainedModel.from_pretrained` reads them after the weights: the model attends
over exactly the trained graph. :meth:`~BigBirdDNAPreTrainedModel.save_pretrained` adds them back
(``Trainer.save_model`` and its checkpoints go through it), so a folder saved after fine-tuning
keeps the trained graph and loads in :meth:`bigbird_dna.BigBirdDNA.from_pretrained` too (with the
tokenizer saved beside it). A folder saved by an older copy of this file holds no layouts; loaded
again, the model regenerates them from ``model.attention`` (its seed), which gives the same graph
while the layout generator is unchanged.

**Rotary tables.** ``transformers`` builds the model on the meta device and materialises
non-persistent buffers empty; :meth:`~BigBirdDNAPreTrainedModel._init_weights` recomputes RoPE's
frequencies.

**Inputs.** ``input_ids [B, T]`` as the export's ``tokenizer.json`` gives them (``[CLS] tokens
[SEP]``, right-padded); ``attention_mask [B, T]``, 1/True on real tokens (taken from
``input_ids != pad`` when omitted). ``token_type_ids`` are accepted and ignored (one segment).

**Losses** (when ``labels`` is given), by ``config.problem_type``: ``multi_label_classification``
(promoter: one logit, binary; chromatin: one sigmoid per profile) is BCE-with-logits on float
labels shaped like the logits (``[B]`` is read as ``[B, 1]``); ``single_label_classification``
(classify: softmax over C classes) is cross-entropy on class ids; ``regression`` is MSE. The MLM
loss is cross-entropy over positions whose label is not -100.

This file is copied verbatim into every export folder beside ``configuration_bigbird_dna.py``.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput, MaskedLMOutput, SequenceClassifierOutput
from transformers.utils import cached_file

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import LAYOUTS_KEY, add_to_safetensors, load_safetensors
from bigbird_dna.model.networks import ClassifierNetwork, MaskedLMNetwork
from bigbird_dna.model.outputs import SIGMOID, SOFTMAX, ModelOutput
from bigbird_dna.model.rotary import RotaryEmbedding
from bigbird_dna.runtime.atomic import follow_umask

from .configuration_bigbird_dna import BigBirdDNAConfig

# from_pretrained arguments that locate the weights file (a Hub repo or a local folder)
_LOCATION_KWARGS = ("cache_dir", "force_download", "local_files_only", "token", "revision", "subfolder")


class _Encoder(BigBirdEncoder):
    """:class:`BigBirdEncoder` without extra state: its layouts are set by ``from_pretrained`` only."""

    get_extra_state = nn.Module.get_extra_state
    set_extra_state = nn.Module.set_extra_state


class BigBirdDNAPreTrainedModel(PreTrainedModel):
    """The loading rules shared by every head; each subclass builds its encoder (``self.encoder``)."""

    config_class = BigBirdDNAConfig
    base_model_prefix = "encoder"
    main_input_name = "input_ids"
    _keys_to_ignore_on_load_unexpected = [r"_extra_state"]  # the pinned layouts, read by from_pretrained

    def __init__(self, config: BigBirdDNAConfig):
        super().__init__(config)
        self.encoder_config = EncoderConfig.from_dict(config.model)

    def _init_weights(self, module: nn.Module) -> None:
        """Weights the export does not hold (a new head): the encoder's own initialisation."""
        BigBirdEncoder._init_weights(module)
        if isinstance(module, nn.LayerNorm):
            nn.init.ones_(module.weight)
            nn.init.zeros_(module.bias)
        if isinstance(module, RotaryEmbedding):
            module.inv_freq.copy_(RotaryEmbedding(2 * module.inv_freq.numel()).inv_freq)

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, *model_args, **kwargs):
        """``PreTrainedModel.from_pretrained``, then the pinned attention layouts of ``model.safetensors``."""
        loaded = super().from_pretrained(pretrained_model_name_or_path, *model_args, **kwargs)
        model = loaded[0] if isinstance(loaded, tuple) else loaded
        location = {k: kwargs[k] for k in _LOCATION_KWARGS if k in kwargs}
        weights = cached_file(pretrained_model_name_or_path, "model.safetensors", **location)
        if weights is not None:
            layouts = load_safetensors(weights, only=LAYOUTS_KEY).get(LAYOUTS_KEY, {})
            BigBirdEncoder.set_extra_state(model.encoder, layouts)
        return loaded

    def save_pretrained(self, save_directory, *args, **kwargs):
        """``PreTrainedModel.save_pretrained``, then the pinned attention layouts added to the
        saved ``model.safetensors`` (as an export holds them), which gets the umask's permissions
        like every other file (safetensors creates it ``0600``)."""
        result = super().save_pretrained(save_directory, *args, **kwargs)
        weights = Path(save_directory) / "model.safetensors"
        layouts = BigBirdEncoder.get_extra_state(self.encoder)
        if weights.is_file() and layouts["layouts"]:  # sharded or pickled saves keep regenerated layouts
            add_to_safetensors(weights, {LAYOUTS_KEY: layouts})
        elif weights.is_file():
            follow_umask(weights)
        return result

    def _mask(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
              inputs_embeds: torch.Tensor | None) -> torch.Tensor:
        """``attention_mask [B, T]`` as bools, or ``input_ids != pad`` when it is omitted."""
        if inputs_embeds is not None:
            raise ValueError("BigBirdDNA models take input_ids, not inputs_embeds.")
        return input_ids != self.encoder_config.pad_id if attention_mask is None else attention_mask.bool()


class BigBirdDNAModel(BigBirdDNAPreTrainedModel):
    """Encoder hidden states: ``last_hidden_state [B, T, hidden]`` (what ``BigBirdDNA.embed(pool=None)`` gives)."""

    def __init__(self, config: BigBirdDNAConfig):
        super().__init__(config)
        self.encoder = _Encoder(self.encoder_config)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, inputs_embeds: torch.Tensor | None = None,
                output_attentions: bool | None = None, output_hidden_states: bool | None = None,
                return_dict: bool | None = None) -> BaseModelOutput:
        mask = self._mask(input_ids, attention_mask, inputs_embeds)
        return BaseModelOutput(last_hidden_state=self.encoder(input_ids, mask))


class BigBirdDNAForMaskedLM(MaskedLMNetwork, BigBirdDNAPreTrainedModel):
    """Logits ``[B, T, vocab]`` at every position, from the MLM head tied to the token embedding."""

    def __init__(self, config: BigBirdDNAConfig):
        super().__init__(config)
        self.build_network(self.encoder_config, encoder_class=_Encoder)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, output_attentions: bool | None = None,
                output_hidden_states: bool | None = None, return_dict: bool | None = None) -> MaskedLMOutput:
        logits = self.logits(input_ids, self._mask(input_ids, attention_mask, inputs_embeds))
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=-100)
        return MaskedLMOutput(loss=loss, logits=logits)


def classifier_output(config: BigBirdDNAConfig) -> ModelOutput:
    """The classifier's output: as the export recorded it, or, for a new head (``num_labels=`` given
    to ``from_pretrained``) or an older export, from ``problem_type`` and ``id2label``."""
    recorded = ModelOutput.from_dict(config.output) if config.output else None
    if recorded is not None and recorded.kind.classifies and recorded.num_outputs == config.num_labels:
        return recorded
    names = tuple(str(config.id2label[i]) for i in range(config.num_labels))
    softmax = config.problem_type == "single_label_classification" and config.num_labels > 1
    return ModelOutput(SOFTMAX if softmax else SIGMOID, names)


class BigBirdDNAForSequenceClassification(ClassifierNetwork, BigBirdDNAPreTrainedModel):
    """Logits ``[B, num_labels]`` from the pooled classifier head (settings in ``task_config.head``)."""

    def __init__(self, config: BigBirdDNAConfig):
        super().__init__(config)
        self.build_network(self.encoder_config, classifier_output(config), config.task_config.get("head"),
                           encoder_class=_Encoder)
        self.post_init()

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                token_type_ids: torch.Tensor | None = None, labels: torch.Tensor | None = None,
                inputs_embeds: torch.Tensor | None = None, output_attentions: bool | None = None,
                output_hidden_states: bool | None = None,
                return_dict: bool | None = None) -> SequenceClassifierOutput:
        logits = self.logits(input_ids, self._mask(input_ids, attention_mask, inputs_embeds))
        loss = None if labels is None else self._loss(logits.float(), labels)
        return SequenceClassifierOutput(loss=loss, logits=logits)

    def _loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        kind = self.config.problem_type
        if kind == "single_label_classification":
            return nn.functional.cross_entropy(logits, labels.long().view(-1))
        if kind == "regression":
            return nn.functional.mse_loss(logits, labels.float().view_as(logits))
        if kind == "multi_label_classification":
            return nn.functional.binary_cross_entropy_with_logits(logits, labels.float().view_as(logits))
        raise ValueError(f"config.problem_type={kind!r}: use 'multi_label_classification', "
                         "'single_label_classification' or 'regression'.")
