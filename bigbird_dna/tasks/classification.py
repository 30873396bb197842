"""Sequence classification on a pooled vector: the shared base of the promoter, chromatin and classify tasks.

:class:`SequenceClassificationTask` is the composed classifier of :mod:`bigbird_dna.model.networks`
(a BigBird encoder plus a :class:`~bigbird_dna.model.heads.ClassificationHead`) as a
LightningModule. Its output (:mod:`bigbird_dna.model.outputs`) is given by the subclass; the base
trains ``num_labels`` independent sigmoid outputs with BCE-with-logits, optionally with the positive
class up-weighted (``pos_weight``; the paper uses 8 for chromatin profiles). Subclasses only say
which output names and metrics they have, through
:meth:`SequenceClassificationTask.compute_metrics`, which receives every validation probability
and target of the epoch at once (``[N, num_labels]`` each).

Fine-tuning starts from an MLM export (``backbone``, :mod:`bigbird_dna.tasks.backbone`): its encoder
config, tokenizer and ``encoder.*`` weights, including the pinned attention layouts, are taken over;
missing and unexpected keys are printed, never silently dropped. Without a backbone the encoder is trained from scratch.

A head whose composition path is fitted first gets that fit from :mod:`~bigbird_dna.tasks.stacking`.

Logged metrics: ``train/loss``, ``train/lr``, ``val/loss`` plus ``val/<name>`` for each metric of
:meth:`compute_metrics` (and the same under ``test/`` for ``trainer.test``).
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import torch
from torch import nn
from torchmetrics import MeanMetric

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.metrics import output_metrics
from bigbird_dna.model.composition import resolve_composition
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.networks import ClassifierNetwork
from bigbird_dna.model.outputs import KINDS, SIGMOID, ModelOutput, default_names
from bigbird_dna.tasks.backbone import load_backbone, report
from bigbird_dna.tasks.base import EncoderTask
from bigbird_dna.tasks.mlm_auxiliary import AuxiliaryMLM, checked_settings
from bigbird_dna.tasks.shuffle_contrast import ShuffleContrast
from bigbird_dna.tasks.stacking import CompositionStacking
from bigbird_dna.tokenizer.bpe import DNATokenizer


def checked_dropout(rate: float, setting: str) -> float:
    """``rate`` if it is a dropout rate in [0, 1), else an :class:`InputError` naming ``setting``."""
    if not 0 <= rate < 1:
        raise InputError(f"{setting}={rate} must be a dropout rate in [0, 1), or null to keep model.dropout.")
    return rate


class SequenceClassificationTask(CompositionStacking, ClassifierNetwork, EncoderTask):
    """BigBird encoder + pooled classification head, ``num_labels`` independent BCE outputs.

    Args:
        model: :class:`EncoderConfig` as a plain dict.
        optim: the ``optim`` config group as a plain dict.
        num_labels: number of sigmoid outputs.
        pos_weight: BCE weight of positive targets (``None`` = 1); the paper uses 8 for chromatin.
        head: :class:`ClassificationHead` settings, ``{"dropout": float, "hidden_size": int | None,
            "pooling": "cls" | "mean" | "max" | "mean_max" | "attention", "read": "bases" | "tokens"}``
            (exports without ``pooling`` are ``cls``, without ``read`` ``bases``).
        tokenizer_sha256: fingerprint of the tokenizer the ids come from.
        tokenizer_json: the tokenizer itself, embedded in every checkpoint (not a hyperparameter).
        backbone: an export (an MLM run's ``export/``) whose encoder weights, with their attention
            layouts, initialise this encoder (:func:`load_backbone`); ``None`` trains from scratch.
        output_kind: the kind of output (:data:`~bigbird_dna.model.outputs.KINDS`) of ``num_labels``
            columns named ``label_<j>``, when ``output`` is not given.
        output: what the head gives, with its names; set by subclasses, recorded in the export, not a
            hyperparameter.
        shuffle_contrast_steps: optimizer steps of a label-free warm-up first, each training sequence
            against a resampled copy of itself (:mod:`~bigbird_dna.tasks.shuffle_contrast`); 0: none.
        encoder_dropout: the encoder's dropout while this task trains, in place of ``model``'s (or
            the backbone's) ``dropout``; ``None`` keeps it; ``"auto"``: 0 from scratch, the
            backbone's own with a ``backbone`` (measured: docs/metrics.md, "Labelled defaults").
            Recorded resolved in the hyperparameters, and in the export's model config.
        composition_judge: when a fitted composition path (``head.composition_fit=first``) is kept:
            ``cnn``, only where its k-mer LR scores at least the small CNN on val; ``chance``,
            wherever it is above chance (:func:`~bigbird_dna.tasks.composition_fit.fit_composition_path`).
        mlm_auxiliary: ``{"weight", "mask_prob", "rows"}``: with ``weight`` above 0, every training
            step adds that times a masked-LM loss on ``rows`` masked copies of its sequences, with
            the backbone's MLM head (:mod:`~bigbird_dna.tasks.mlm_auxiliary`); ``None``: off.
        network_readout: the weight of a second read-out of the pooled vector trained on the labels
            alone while a fitted composition path is kept (:mod:`~bigbird_dna.tasks.stacking`); 0: none.

    Every hyperparameter is a plain type, so checkpoints load with ``weights_only=True``.
    """

    task_name = "classification"

    def __init__(self, model: dict[str, Any], optim: dict[str, Any], num_labels: int = 1,
                 pos_weight: float | None = None, head: dict[str, Any] | None = None,
                 tokenizer_sha256: str = "", tokenizer_json: str | None = None, backbone: str | None = None,
                 output_kind: str = "sigmoid", output: ModelOutput | None = None, shuffle_contrast_steps: int = 0,
                 encoder_dropout: float | str | None = None, composition_judge: str = "cnn",
                 mlm_auxiliary: dict[str, Any] | None = None, network_readout: float = 0.0):
        super().__init__()
        self.init_stacking(composition_judge)
        if num_labels < 1:
            raise InputError(f"num_labels={num_labels}: a classifier needs at least one label.")
        if pos_weight is not None and pos_weight <= 0:
            raise InputError(f"task.pos_weight={pos_weight} must be positive (or null for 1).")
        # task.head.composition=auto becomes a number here, so checkpoints and exports record what was built
        head = {**(head or {}), "composition": resolve_composition(
            (head or {}).get("composition"), DNATokenizer.from_str(tokenizer_json) if tokenizer_json else None)}
        # Run-specific or bulky inputs of subclasses are not hyperparameters (checkpoints stay plain).
        self.save_hyperparameters(ignore=["tokenizer_json", "rc_pairs", "data_label_names", "report_dir", "output"])
        self.hparams["head"] = head  # a subclass's own arguments would bring back the unresolved setting
        if encoder_dropout == "auto":  # resolved here, so checkpoints and exports record what was built
            encoder_dropout = self.hparams["encoder_dropout"] = None if backbone else 0.0
        if isinstance(encoder_dropout, str):
            raise InputError(f"task.encoder_dropout={encoder_dropout!r}: give a dropout rate in [0, 1), null to keep "
                             "the model's (or the backbone's), or auto (0 from scratch, the backbone's with one).")
        if encoder_dropout is not None:
            checked_dropout(encoder_dropout, "task.encoder_dropout")
        self.config = EncoderConfig.from_dict({**model, **({} if encoder_dropout is None else
                                                            {"dropout": float(encoder_dropout)})})
        if output is None and output_kind not in KINDS:
            raise InputError(f"task.output_kind={output_kind!r} is not one of {sorted(KINDS)}.")
        self.build_network(self.config, output or ModelOutput(KINDS[output_kind], default_names("label", num_labels)),
                           head)
        self.tokenizer_json = tokenizer_json
        if pos_weight is not None and self.output.kind is not SIGMOID:
            raise InputError(f"task.pos_weight weights the positives of sigmoid outputs; a {self.output.kind.name} "
                             "output takes none (task=classify: set task.class_weights).")
        # the loss's weight (OutputKind.loss): the positives' weight of sigmoid outputs; none for the others
        weight = torch.tensor(float(pos_weight or 1.0)) if self.output.kind is SIGMOID else None
        self.register_buffer("loss_weight", weight, persistent=False)
        self.mean_loss = nn.ModuleDict({"val": MeanMetric(), "test": MeanMetric()})
        self._collected: dict[str, list[tuple[torch.Tensor, torch.Tensor]]] = {"val": [], "test": []}
        self.shuffle_contrast = (ShuffleContrast(self.head.pool.output_size, shuffle_contrast_steps)
                                 if shuffle_contrast_steps else None)
        mlm_auxiliary = self.hparams["mlm_auxiliary"] = checked_settings(mlm_auxiliary)  # recorded as built
        self.mlm_auxiliary = self.build_mlm_auxiliary(mlm_auxiliary)
        self.build_readout(network_readout)
        if backbone:
            self.load_backbone(backbone)
            source = "the backbone's own" if encoder_dropout is None else "task.encoder_dropout"
            report(f"encoder dropout while fine-tuning: {self.config.dropout} ({source}).")

    def set_encoder_dropout(self, rate: float) -> None:
        """Every dropout of the encoder at ``rate``, recorded in ``config`` (and so in the export);
        the small-set recipe's ``task.schedule.small_encoder_dropout``."""
        checked_dropout(rate, "task.schedule.small_encoder_dropout")
        for module in self.encoder.modules():
            if isinstance(module, nn.Dropout):
                module.p = rate
        self.config = self.encoder.config = dataclasses.replace(self.config, dropout=rate)

    def build_mlm_auxiliary(self, settings: dict[str, Any]) -> AuxiliaryMLM | None:
        """The auxiliary MLM loss of ``task.mlm_auxiliary``, or ``None`` at weight 0."""
        if not settings["weight"]:
            return None
        if self.shuffle_contrast is not None:
            raise InputError("task.mlm_auxiliary and task.shuffle_contrast_steps do not go together: set "
                             "task.mlm_auxiliary.weight=0 or task.shuffle_contrast_steps=0.")
        if not self.tokenizer_json:
            raise InputError("task.mlm_auxiliary needs the tokenizer (train passes it); set its weight to 0.")
        return AuxiliaryMLM(self.config, self.encoder.token_embedding, DNATokenizer.from_str(self.tokenizer_json),
                            **settings)

    def load_backbone(self, export_path: str | os.PathLike) -> tuple[list[str], list[str]]:
        """Initialise the encoder from an export, and the auxiliary MLM head from its MLM head when
        there is one; see :func:`load_backbone`."""
        return load_backbone(self.encoder, export_path,
                             mlm_head=None if self.mlm_auxiliary is None else self.mlm_auxiliary.head)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """Logits ``[B, num_labels]`` for ``input_ids``/``attention_mask [B, T]``."""
        return self.logits(input_ids, attention_mask)

    def loss(self, logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """The output kind's loss of logits ``[B, num_labels]`` against ``labels`` (sigmoid: BCE with the
        positives times ``pos_weight``)."""
        return self.output.kind.loss(logits, labels, self.loss_weight)

    def compute_metrics(self, probs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        """Metrics of one evaluation epoch: those of the output kind
        (:func:`~bigbird_dna.evaluation.metrics.output_metrics`); subclasses may report more.

        Args:
            probs: ``[N, num_labels]`` float32 probabilities of every evaluated sequence (on CPU).
            targets: ``[N, num_labels]`` int64 0/1 targets.

        Returns:
            ``{name: scalar}``, logged as ``val/<name>`` (or ``test/<name>``).
        """
        return {name: torch.as_tensor(value) for name, value in
                output_metrics(self.output.kind.name, probs, targets).items()}

    @property
    def in_label_free_warmup(self) -> bool:
        """True while the shuffle contrast's warm-up runs (its validations are not counted by early stopping)."""
        return self.shuffle_contrast is not None and self.global_step < self.shuffle_contrast.steps

    def export_weights(self, state: dict[str, Any]) -> dict[str, Any]:
        """A checkpoint's ``state_dict`` without the warm-up's score, the auxiliary MLM head and the
        network's own read-out, which only training uses."""
        return {k: v for k, v in state.items()
                if not k.startswith(("shuffle_contrast.", "mlm_auxiliary.", "network_readout."))}

    def on_train_start(self) -> None:
        if self.in_label_free_warmup:
            report(f"shuffle contrast: steps {self.global_step + 1}-{self.shuffle_contrast.steps} tell each training "
                    "sequence from a resampled copy of itself (task.shuffle_contrast_steps); the labels train from "
                    f"step {self.shuffle_contrast.steps + 1}, and validations before then do not count for early "
                    "stopping.")

    def training_loss(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, str]:
        """The loss of one training batch and what it is: ``"contrast"`` during the shuffle
        contrast's warm-up (the labels are not read), else ``"labels"``. Every parameter takes part
        in both, the unused head's times zero, as DDP requires."""
        input_ids, attention_mask = batch["input_ids"], batch["attention_mask"]
        batch_size = input_ids.shape[0]
        warming = self.in_label_free_warmup
        if warming:
            input_ids, attention_mask = self.shuffle_contrast.inputs(input_ids, attention_mask)
        pooled = self.pooled(input_ids, attention_mask)
        logits = self.head.classify(pooled[:batch_size], input_ids[:batch_size])
        if warming:
            return (self.shuffle_contrast.loss(pooled) + 0.0 * logits.sum()
                    + self.readout_loss(pooled[:batch_size], None)), "contrast"
        loss = self.loss(logits, batch["labels"]) + self.readout_loss(pooled[:batch_size], batch["labels"])
        if self.mlm_auxiliary is not None:
            loss = loss + self.mlm_auxiliary(self.encoder, input_ids, attention_mask)
        if self.shuffle_contrast is not None:
            loss = loss + 0.0 * self.shuffle_contrast.score(pooled).sum()
        return loss, "labels"

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss, kind = self.training_loss(batch)
        batch_size = batch["input_ids"].shape[0]
        if kind == "contrast":
            self.log("train/contrast_loss", loss, batch_size=batch_size)
        if self.mlm_auxiliary is not None:
            self.log("train/mlm_loss", self.mlm_auxiliary.last_loss, batch_size=batch_size)
        self.log("train/loss", loss, prog_bar=True, batch_size=batch_size)
        self.log("train/lr", self.optimizers().param_groups[0]["lr"], batch_size=batch_size)
        return loss

    def _evaluate(self, split: str, batch: dict[str, torch.Tensor]) -> None:
        """Loss and probabilities of one batch; a batch with ``rc_input_ids`` (the data's
        ``eval_reverse_complement``) is scored on both strands, the loss and probabilities averaged."""
        logits = self(batch["input_ids"], batch["attention_mask"]).float()
        loss, probs = self.loss(logits, batch["labels"]), self.probabilities(logits)
        if "rc_input_ids" in batch:
            rc_logits = self(batch["rc_input_ids"], batch.get("rc_attention_mask")).float()
            loss = (loss + self.loss(rc_logits, batch["labels"])) / 2
            probs = (probs + self.probabilities(rc_logits)) / 2
        self.mean_loss[split].update(loss, batch["input_ids"].shape[0])
        self._collected[split].append((probs.cpu(), batch["labels"].cpu()))

    def _evaluation_epoch_end(self, split: str) -> None:
        if not self._collected[split]:
            return
        probs = torch.cat([p for p, _ in self._collected[split]])  # [N, num_labels]
        targets = torch.cat([t for _, t in self._collected[split]])
        self._collected[split].clear()
        if self.trainer is not None and self.trainer.world_size > 1:  # every rank scores all samples
            probs = self.all_gather(probs).reshape(-1, probs.shape[-1]).cpu()
            targets = self.all_gather(targets).reshape(-1, targets.shape[-1]).cpu()
        metrics = {"loss": self.mean_loss[split].compute(),
                   **self.compute_metrics(probs, targets.round().long())}
        self.mean_loss[split].reset()
        self.log_dict({f"{split}/{k}": torch.as_tensor(v, dtype=torch.float32) for k, v in metrics.items()},
                      prog_bar=split == "val", sync_dist=False)  # already gathered across ranks

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate("val", batch)

    def on_validation_epoch_end(self) -> None:
        self._evaluation_epoch_end("val")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluate("test", batch)

    def on_test_epoch_end(self) -> None:
        self._evaluation_epoch_end("test")
