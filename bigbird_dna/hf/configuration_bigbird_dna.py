"""``BigBirdDNAConfig``: the ``transformers`` view of a bigbird_dna export's ``config.json``.

An export's ``config.json`` keeps the project's schema (``task``, ``model``: the
:class:`~bigbird_dna.model.config.EncoderConfig` dict, ``task_config``, ``metadata``) and adds the
keys ``transformers`` needs (``model_type``, ``architectures``, ``auto_map``, and for classifiers
``problem_type`` and ``id2label``). This class reads the project keys as attributes of the same
names, so one file serves :func:`~bigbird_dna.model.export.load_export` and ``AutoConfig``, and a
config that ``transformers`` saves again still loads in bigbird_dna. The usual HF names
(``hidden_size``, ``num_hidden_layers``, ...) are derived from ``model`` for tools that read them.

This file is copied verbatim into every export folder (``trust_remote_code=True`` loads it from
there) and imports nothing but ``transformers``.
"""

from __future__ import annotations

from typing import Any

from transformers import PretrainedConfig


class BigBirdDNAConfig(PretrainedConfig):
    """Config of a bigbird_dna model.

    Args:
        task: the export's task (``"mlm"``, ``"promoter"``, ``"classify"``, ``"chromatin"``...).
        model: the encoder's settings (``EncoderConfig.to_dict()``).
        task_config: the task's settings (classifier head, class names...).
        metadata: provenance (seed, steps, training data and command; no absolute paths).
        output: what the head gives, ``{"kind": "sigmoid" | "softmax" | "masked_lm", "names": [...]}``
            (``None`` in exports written before it was recorded).
    """

    model_type = "bigbird_dna"

    def __init__(self, task: str = "mlm", model: dict[str, Any] | None = None,
                 task_config: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None,
                 output: dict[str, Any] | None = None, **kwargs):
        self.task = task
        self.model = dict(model or {})
        self.output = dict(output) if output else None
        self.task_config = dict(task_config or {})
        self.metadata = dict(metadata or {})
        # The MLM decoder shares the token embedding inside the encoder module itself; HF must not re-tie.
        kwargs["tie_word_embeddings"] = False
        kwargs.setdefault("pad_token_id", self.model.get("pad_id", 0))
        super().__init__(**kwargs)
        self.hidden_size = self.model.get("hidden_size")
        self.num_hidden_layers = self.model.get("num_layers")
        self.num_attention_heads = self.model.get("num_heads")
        self.intermediate_size = self.model.get("intermediate_size")
        self.max_position_embeddings = self.model.get("max_positions")
        self.vocab_size = self.model.get("vocab_size")
