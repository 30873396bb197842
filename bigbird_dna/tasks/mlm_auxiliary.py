"""An auxiliary masked-LM loss while a classifier fine-tunes (``task.mlm_auxiliary``).

Fine-tuning from an MLM backbone can forget what pretraining taught before the labels have made
use of it. Keeping the pretraining objective beside the labels, on the task's own training
sequences, is the remedy of Chronopoulou et al. (NAACL 2019, "An embarrassingly simple approach
for transfer learning from pretrained language models"): the backbone's MLM head is taken over,
and every step adds ``weight`` times its masked-token cross-entropy to the label loss.

Each training step masks copies of the batch's first ``rows`` sequences (BERT masking,
:func:`~bigbird_dna.data.mlm.masking.mask_tokens`: ``mask_prob`` of the real tokens, 80% [MASK],
10% a random token, 10% unchanged), which the encoder reads in a second pass and the MLM head
scores. The clean batch is classified exactly as without the auxiliary loss. A step costs about
``(B + rows) / B`` times as much. The MLM head is used in training only: it is not exported.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

import torch
from torch import nn

from bigbird_dna.data.mlm.masking import IGNORE_INDEX, mask_tokens, replacement_candidates
from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.heads import MLMHead
from bigbird_dna.model.stem import MaskedBatchNorm
from bigbird_dna.tokenizer.bpe import DNATokenizer

SETTINGS = {"weight": 0.0, "mask_prob": 0.15, "rows": 8}


def checked_settings(settings: dict[str, Any] | None) -> dict[str, Any]:
    """``task.mlm_auxiliary`` with its defaults filled in (:data:`SETTINGS`), or an :class:`InputError`
    naming the setting that is out of range or unknown."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(SETTINGS))
    if unknown:
        raise InputError(f"task.mlm_auxiliary has no setting {', '.join(unknown)}; it takes {', '.join(SETTINGS)}.")
    settings = {**SETTINGS, **settings}
    if not settings["weight"] >= 0:
        raise InputError(f"task.mlm_auxiliary.weight={settings['weight']} must be >= 0 (0: off).")
    if not 0 < settings["mask_prob"] < 1:
        raise InputError(f"task.mlm_auxiliary.mask_prob={settings['mask_prob']} must be a share in (0, 1).")
    if int(settings["rows"]) != settings["rows"] or settings["rows"] < 1:
        raise InputError(f"task.mlm_auxiliary.rows={settings['rows']} must be a row count >= 1.")
    return {"weight": float(settings["weight"]), "mask_prob": float(settings["mask_prob"]),
            "rows": int(settings["rows"])}


class AuxiliaryMLM(nn.Module):
    """The auxiliary loss's MLM head and masking.

    Args:
        config: the encoder's config.
        embedding: the encoder's token embedding, which the head's decoder shares.
        tokenizer: the tokenizer of the ids (its special and N-run ids are never masked).
        weight: the loss's factor, > 0.
        mask_prob: the share of real tokens selected in each masked row.
        rows: masked rows per step (at most the batch's size).
    """

    def __init__(self, config: EncoderConfig, embedding: nn.Embedding, tokenizer: DNATokenizer,
                 weight: float, mask_prob: float, rows: int):
        super().__init__()
        self.head = MLMHead(config, embedding)
        self.weight, self.mask_prob, self.rows = weight, mask_prob, rows
        self.mask_id, self.vocab_size = tokenizer.mask_id, tokenizer.vocab_size
        self.last_loss: torch.Tensor | None = None
        unmaskable = torch.tensor(sorted(tokenizer.special_ids | tokenizer.n_run_ids))
        self.register_buffer("unmaskable_ids", unmaskable, persistent=False)
        self.register_buffer("replacement_ids", replacement_candidates(self.vocab_size, unmaskable), persistent=False)

    def forward(self, encoder: nn.Module, input_ids: torch.Tensor, attention_mask: torch.Tensor | None
                ) -> torch.Tensor:
        """``weight`` times the masked-token cross-entropy of the batch's first ``rows`` sequences.

        The masked rows run through ``encoder`` in a pass of their own, so the clean rows'
        batch-normalisation statistics (the hybrid stem's) are those of the clean batch alone, and
        the running statistics that evaluation uses are left as that batch set them.

        Args:
            encoder: the classifier's encoder (``[R, T] -> [R, T, hidden]``).
            input_ids: ``[B, T]`` int64 token ids of the training batch.
            attention_mask: ``[B, T]`` or ``None`` (no padding).

        Returns:
            A scalar, also kept as ``last_loss`` (detached) for the training log. Every head
            parameter takes part (times zero where nothing was selected), as DDP requires.
            Masking runs on ``input_ids``' device, from torch's generator there (seeded with the run).
        """
        count = min(self.rows, input_ids.shape[0])
        masked, labels = mask_tokens(input_ids[:count], self.unmaskable_ids, self.mask_id, self.vocab_size,
                                     self.mask_prob, replacement_ids=self.replacement_ids)  # on the device, no sync
        with running_statistics_kept(encoder):
            hidden = encoder(masked, None if attention_mask is None else attention_mask[:count])
        # every position is scored and the unselected ones weigh nothing, so that no step asks the
        # device whether anything was selected (a sync), and an empty selection gives a zero loss
        logits = self.head(hidden).float()
        summed = nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORE_INDEX,
                                             reduction="sum")
        loss = self.weight * summed / (labels != IGNORE_INDEX).sum().clamp(min=1)
        self.last_loss = loss.detach()
        return loss


@contextmanager
def running_statistics_kept(module: nn.Module) -> Iterator[None]:
    """Inside, ``module``'s batch-norm layers still normalise with their batch's statistics in
    training, but their running statistics come out as they went in."""
    norms = [m for m in module.modules() if isinstance(m, MaskedBatchNorm)]
    saved = [(m.running_mean.clone(), m.running_var.clone()) for m in norms]
    try:
        yield
    finally:
        with torch.no_grad():
            for norm, (mean, var) in zip(norms, saved):
                norm.running_mean.copy_(mean)
                norm.running_var.copy_(var)
