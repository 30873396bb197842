"""Masked language modelling on genome windows, as a LightningModule.

Logged metrics (slash-namespaced): ``train/loss``, ``train/acc``, ``val/loss``, ``val/acc``,
``val/bits_per_base`` = val loss / ln 2 / (bases per token), and ``val/bp_per_token``.
Losses are mean cross-entropy in nats over the masked positions only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torchmetrics import MeanMetric, SumMetric

from bigbird_dna.data.masking import IGNORE_INDEX
from bigbird_dna.data.mlm import GenomeMLMDataModule
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.heads import MLMHead
from bigbird_dna.tasks.base import EncoderTask, summary_table


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a pretraining run (``summary`` as in ``summary.json``)."""
    beats = "below" if summary["val/loss"] < summary["val_unigram_entropy"] else "NOT below"
    rows = [
        ("steps", f"{summary['global_step']}"),
        ("val loss (nats/token)", f"{summary['val/loss']:.4f}  ({beats} the unigram entropy "
                                  f"{summary['val_unigram_entropy']:.4f} of the val tokens)"),
        ("val accuracy", f"{summary['val/acc']:.4f}"),
        ("bits per base", f"{summary['val/bits_per_base']:.4f}"),
        ("bp per token", f"{summary['val/bp_per_token']:.3f}"),
        ("best checkpoint", summary["best_checkpoint"]),
        ("last checkpoint", summary["last_checkpoint"]),
        ("export", summary["export"]),
        ("time", f"{summary['seconds']:.0f} s"),
    ]
    return summary_table("MLM pretraining finished", rows)


class MLMTask(EncoderTask):
    """BigBird encoder + MLM head.

    Args:
        model: :class:`EncoderConfig` as a plain dict.
        optim: the ``optim`` config group as a plain dict (lr, weight_decay, betas, warmup_steps).
        tokenizer_sha256: fingerprint of the tokenizer the ids come from, kept with the weights.
        tokenizer_json: the tokenizer itself, embedded in every checkpoint (not a hyperparameter).
        mask_prob: the MLM selection rate the data masks with (recorded here; the collator masks).
        token_counts: ``[vocab_size]`` train token counts; when given, the output bias starts at
            their log frequencies (:meth:`init_output_prior`). Not a hyperparameter.
    """

    task_name = "mlm"
    format_summary = staticmethod(format_summary)
    data_class = GenomeMLMDataModule

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], tokenizer_sha256: str = "",
                 tokenizer_json: str | None = None, mask_prob: float = 0.15,
                 token_counts: torch.Tensor | None = None):
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer_json", "token_counts"])
        self.config = EncoderConfig.from_dict(dict(model))
        self.encoder = BigBirdEncoder(self.config)
        self.head = MLMHead(self.config, self.encoder.token_embedding)
        self.tokenizer_json = tokenizer_json
        self.val_loss = MeanMetric()
        self.val_acc = MeanMetric()
        self.val_bases = SumMetric()
        self.val_tokens = SumMetric()
        if token_counts is not None:
            self.init_output_prior(token_counts)

    @torch.no_grad()
    def init_output_prior(self, token_counts: torch.Tensor) -> None:
        """Start the output bias at the log unigram frequencies (add-one smoothed).

        With weights near zero at initialisation, the logits are then the unigram prior, so training
        spends its steps on context instead of slowly walking a bias several nats (Adam moves it by
        about ``lr`` per step).
        """
        counts = token_counts.to(self.head.bias).double() + 1.0
        self.head.bias.copy_((counts / counts.sum()).log().to(self.head.bias.dtype))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Logits ``[B, T, vocab]`` for every position."""
        return self.head(self.encoder(input_ids, attention_mask))

    def _masked_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, int]:
        hidden = self.encoder(batch["input_ids"], batch["attention_mask"])
        selected = batch["labels"] != IGNORE_INDEX
        logits = self.head(hidden[selected]).float()  # only masked positions: [N, vocab]
        labels = batch["labels"][selected]
        if labels.numel() == 0:
            zero = hidden.sum() * 0.0
            return zero, zero, 0
        loss = F.cross_entropy(logits, labels)
        acc = (logits.argmax(-1) == labels).float().mean()
        return loss, acc, labels.numel()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, acc, count = self._masked_loss(batch)
        batch_size = batch["input_ids"].shape[0]
        self.log("train/loss", loss, prog_bar=True, batch_size=batch_size)
        self.log("train/acc", acc, batch_size=batch_size)
        self.log("train/lr", self.optimizers().param_groups[0]["lr"], batch_size=batch_size)
        return loss

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        loss, acc, count = self._masked_loss(batch)
        if count:
            self.val_loss.update(loss, count)
            self.val_acc.update(acc, count)
        self.val_bases.update(batch["num_bases"])
        self.val_tokens.update(batch["num_tokens"])

    def on_validation_epoch_end(self) -> None:
        loss = self.val_loss.compute()
        bp_per_token = self.val_bases.compute() / self.val_tokens.compute().clamp_min(1)
        self.log_dict({
            "val/loss": loss,
            "val/acc": self.val_acc.compute(),
            "val/bp_per_token": bp_per_token.float(),
            "val/bits_per_base": (loss / math.log(2) / bp_per_token).float(),
        }, prog_bar=True, sync_dist=False)  # the metrics above are already synced across ranks
        for metric in (self.val_loss, self.val_acc, self.val_bases, self.val_tokens):
            metric.reset()
