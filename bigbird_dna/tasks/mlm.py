"""Masked language modelling on genome windows, as a LightningModule.

Honest metrics: val and test score only the positions whose INPUT was [MASK] (evaluation masks
are fixed and replace every selected token by [MASK]), so a model cannot gain by copying its input.

- ``{val,test}/loss``: mean cross-entropy in nats per scored token;
- ``{val,test}/acc``: top-1 accuracy on the scored tokens;
- ``{val,test}/bits_per_base``: total cross-entropy in bits / total bases of the scored tokens
  (= CE in bits / mean bases per scored token);
- ``{val,test}/bp_per_token``: mean bases per scored token.

``train/loss`` is the training objective (BERT 80/10/10: all selected tokens, including the
random and unchanged ones); ``train/mask_acc`` is accuracy on the [MASK] inputs only.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torchmetrics import SumMetric

from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.data.mlm.masking import IGNORE_INDEX
from bigbird_dna.evaluation.summary import chain_rows
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.networks import MaskedLMNetwork
from bigbird_dna.tasks.backbone import load_backbone
from bigbird_dna.tasks.base import EncoderTask, summary_table
from bigbird_dna.tasks.shuffle_contrast import PretrainingContrast
from bigbird_dna.tokenizer import MASK_ID


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a pretraining run (honest metrics: only [MASK] inputs are scored)."""
    rows = [("steps", f"{summary['global_step']}")]
    for split in ("val", "test"):
        if f"{split}/loss" not in summary:
            continue
        rows += [
            (f"{split} loss at [MASK]", f"{summary[f'{split}/loss']:.4f} nats/token, "
                                        f"accuracy {summary[f'{split}/acc']:.4f}"),
            (f"{split} bits per base", f"{summary[f'{split}/bits_per_base']:.4f}  "
                                       f"({summary[f'{split}/bp_per_token']:.3f} bp per scored token)"),
            *chain_rows(summary, split),
        ]
    rows += [
        ("best checkpoint", summary["best_checkpoint"]),
        ("last checkpoint", summary["last_checkpoint"]),
        ("export", summary["export"]),
        ("time", f"{summary['seconds']:.0f} s"),
    ]
    return summary_table("MLM pretraining finished", rows)


class MLMTask(MaskedLMNetwork, EncoderTask):
    """BigBird encoder + MLM head (:class:`~bigbird_dna.model.networks.MaskedLMNetwork`).

    Args:
        model: :class:`EncoderConfig` as a plain dict.
        optim: the ``optim`` config group as a plain dict (lr, weight_decay, betas, warmup_steps).
        tokenizer_sha256: fingerprint of the tokenizer the ids come from, kept with the weights.
        tokenizer_json: the tokenizer itself, embedded in every checkpoint (not a hyperparameter).
        token_counts: ``[vocab_size]`` train token counts; when given, the output bias starts at
            their log frequencies (:meth:`init_output_prior`). Not a hyperparameter.
        backbone: an MLM export (``<run dir>/export``) to continue pretraining from: its encoder and
            MLM head weights, encoder config and tokenizer (for example a genome's MLM, continued on
            a task's own sequences); ``None`` starts from scratch.
        shuffle_contrast: the weight of a second loss beside the MLM's, each window against a
            resampled copy of itself (:class:`~bigbird_dna.tasks.shuffle_contrast.PretrainingContrast`;
            a step then reads twice the rows); 0: none.
    """

    task_name = "mlm"
    format_summary = staticmethod(format_summary)
    data_class = GenomeMLMDataModule

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], tokenizer_sha256: str = "",
                 tokenizer_json: str | None = None, token_counts: torch.Tensor | None = None,
                 backbone: str | None = None, shuffle_contrast: float = 0.0):
        super().__init__()
        self.save_hyperparameters(ignore=["tokenizer_json", "token_counts"])
        self.config = EncoderConfig.from_dict(dict(model))
        self.build_network(self.config)
        self.contrast_loss: torch.Tensor | None = None  # the last training step's, for the log
        self.shuffle_contrast = PretrainingContrast(self.config.hidden_size, shuffle_contrast) if shuffle_contrast \
            else None
        self.tokenizer_json = tokenizer_json
        # Sums over the scored tokens of a val/test pass: CE (nats), correct, tokens, bases.
        self.eval_sums = torch.nn.ModuleDict({name: SumMetric() for name in ("nats", "correct", "tokens", "bases")})
        if token_counts is not None:
            self.init_output_prior(token_counts)
        if backbone:
            load_backbone(self.encoder, backbone, mlm_head=self.head)

    @torch.no_grad()
    def init_output_prior(self, token_counts: torch.Tensor) -> None:
        """Start the output bias at the log unigram frequencies (add-one smoothed).

        With weights near zero at initialisation, the logits are then the unigram prior, so training
        spends its steps on context instead of slowly walking a bias several nats (Adam moves it by
        about ``lr`` per step).
        """
        counts = token_counts.to(self.head.bias).double() + 1.0
        self.head.bias.copy_((counts / counts.sum()).log().to(self.head.bias.dtype))

    def export_weights(self, state: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint's ``state_dict`` without the pretraining contrast, which only training uses."""
        return {k: v for k, v in state.items() if not k.startswith("shuffle_contrast.")}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, T, vocab]`` for every position."""
        return self.logits(input_ids, attention_mask)

    def _masked_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Training objective: mean CE over every selected token; and accuracy at [MASK] inputs.

        Logits are computed for the selected positions only (``[N, vocab]``, not ``[B, T, vocab]``),
        gathered by the collator's ``selected_index``: no device sync (a boolean index would be one).
        """
        input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
        if self.shuffle_contrast is not None:
            input_ids, attention_mask = self.shuffle_contrast.inputs(input_ids, attention_mask)
        hidden = self.encoder(input_ids, attention_mask)
        contrast = 0.0
        if self.shuffle_contrast is not None:
            self.contrast_loss = contrast = self.shuffle_contrast.loss(hidden, attention_mask)
            hidden = hidden[:batch["input_ids"].shape[0]]
        index = batch.get("selected_index")
        if index is None:  # a batch from elsewhere: find the positions here (a sync on a GPU)
            index = (batch["labels"] != IGNORE_INDEX).flatten().nonzero()[:, 0]
        if index.numel() == 0:
            zero = hidden.sum() * 0.0
            return zero + contrast, zero, 0
        logits = self.head(hidden.flatten(0, 1).index_select(0, index)).float()  # [N, vocab]
        labels = batch["labels"].flatten().index_select(0, index)
        loss = self.output.kind.loss(logits, labels)
        at_mask = batch["input_ids"].flatten().index_select(0, index) == MASK_ID
        acc = ((logits.argmax(-1) == labels) & at_mask).sum() / at_mask.sum().clamp_min(1)
        return loss + contrast, acc, index.numel()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, acc, count = self._masked_loss(batch)
        batch_size = batch["input_ids"].shape[0]
        self.log("train/loss", loss, prog_bar=True, batch_size=batch_size)
        self.log("train/mask_acc", acc, batch_size=batch_size)
        if self.contrast_loss is not None:
            self.log("train/contrast_loss", self.contrast_loss, batch_size=batch_size)
        self.log("train/lr", self.optimizers().param_groups[0]["lr"], batch_size=batch_size)
        return loss

    def _eval_step(self, batch: dict[str, torch.Tensor]) -> None:
        """Accumulate CE, hits, tokens and bases over the tokens whose input is [MASK]."""
        scored = (batch["labels"] != IGNORE_INDEX) & (batch["input_ids"] == MASK_ID)
        if not scored.any():
            return
        hidden = self.encoder(batch["input_ids"], batch["attention_mask"])
        logits = self.head(hidden[scored]).float()
        labels = batch["labels"][scored]
        self.eval_sums["nats"].update(F.cross_entropy(logits, labels, reduction="sum"))
        self.eval_sums["correct"].update((logits.argmax(-1) == labels).sum().float())
        self.eval_sums["tokens"].update(torch.tensor(float(labels.numel()), device=logits.device))
        self.eval_sums["bases"].update(batch["label_bases"][scored].sum().float())

    def _eval_epoch_end(self, split: str) -> None:
        sums = {name: metric.compute().double() for name, metric in self.eval_sums.items()}
        tokens, bases = sums["tokens"].clamp_min(1), sums["bases"].clamp_min(1)
        self.log_dict({
            f"{split}/loss": (sums["nats"] / tokens).float(),
            f"{split}/acc": (sums["correct"] / tokens).float(),
            f"{split}/bits_per_base": (sums["nats"] / math.log(2) / bases).float(),
            f"{split}/bp_per_token": (bases / tokens).float(),
        }, prog_bar=split == "val", sync_dist=False)  # SumMetric.compute already synced the ranks
        for metric in self.eval_sums.values():
            metric.reset()

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def on_validation_epoch_end(self) -> None:
        self._eval_epoch_end("val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._eval_step(batch)

    def on_test_epoch_end(self) -> None:
        self._eval_epoch_end("test")
