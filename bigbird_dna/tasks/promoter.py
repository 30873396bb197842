"""Promoter prediction: one sigmoid output on the [CLS] vector, fine-tuned from an MLM export or
trained from scratch (``python -m bigbird_dna.train task=promoter data=promoter_epdnew ...``).

Logged metrics: ``train/loss``, ``val/loss`` and, at the 0.5 threshold where one is needed,
``val/f1``, ``val/auroc``, ``val/auprc`` (average precision), ``val/mcc`` and ``val/accuracy``,
all from torchmetrics.
"""

from __future__ import annotations

from typing import Any

import torch
from torchmetrics.functional.classification import (
    binary_accuracy,
    binary_auroc,
    binary_average_precision,
    binary_f1_score,
    binary_matthews_corrcoef,
)

from bigbird_dna.tasks.classification import (
    SequenceClassificationTask,
    resolve_encoder_and_tokenizer,
)

DATA_SOURCES = {
    "epdnew": "bigbird_dna.data.promoter.datamodule:EpdnewPromoterData",
    "labelled": "bigbird_dna.data.promoter.datamodule:LabelledPromoterData",
}


class PromoterTask(SequenceClassificationTask):
    """:class:`SequenceClassificationTask` with one label and the promoter metrics."""

    task_name = "promoter"

    def compute_metrics(self, probs: torch.Tensor, targets: torch.Tensor) -> dict[str, torch.Tensor]:
        probs, targets = probs[:, 0], targets[:, 0]  # [N]
        metrics = {"f1": binary_f1_score(probs, targets), "mcc": binary_matthews_corrcoef(probs, targets),
                   "accuracy": binary_accuracy(probs, targets)}
        if targets.min() == targets.max():  # AUROC/AUPRC are undefined with one class
            return {**metrics, "auroc": torch.tensor(float("nan")), "auprc": torch.tensor(float("nan"))}
        return {**metrics, "auroc": binary_auroc(probs, targets), "auprc": binary_average_precision(probs, targets)}


def build(cfg, run_dir, is_main_process: bool):
    """Promoter data + tokenizer + :class:`PromoterTask` for ``task=promoter``."""
    import importlib

    from bigbird_dna.errors import InputError
    from bigbird_dna.runtime.resolvers import to_plain
    from bigbird_dna.tasks import BuiltTask

    data = to_plain(cfg.data)
    source = DATA_SOURCES.get(data.get("source"))
    if source is None:
        raise InputError(f"task=promoter needs promoter data: data=promoter_epdnew or data=promoter_labelled "
                         f"(data.source is {data.get('source')!r}, expected one of {sorted(DATA_SOURCES)}).")
    module_name, cls = source.split(":")
    datamodule = getattr(importlib.import_module(module_name), cls)(data, cfg.seed, run_dir, is_main_process)
    task = to_plain(cfg.task)
    model, tokenizer = resolve_encoder_and_tokenizer(task["backbone"], to_plain(cfg.model), to_plain(cfg.tokenizer),
                                                     run_dir, is_main_process, datamodule.training_text)
    datamodule.attach_tokenizer(tokenizer, model["max_positions"])
    module = PromoterTask(model, to_plain(cfg.optim), num_labels=1, pos_weight=task["pos_weight"],
                          head=task["head"], tokenizer_sha256=tokenizer.sha256, tokenizer_json=tokenizer.to_str(),
                          backbone=task["backbone"])
    if task["backbone"]:
        module.load_backbone(task["backbone"])
    return BuiltTask(module, datamodule, tokenizer, format_summary, {})


def format_summary(summary: dict[str, Any]) -> str:
    """The closing lines of a promoter fine-tuning run."""
    rows = [
        ("steps", f"{summary['global_step']}"),
        ("val loss (BCE)", f"{summary['val/loss']:.4f}"),
        ("val F1 / MCC", f"{summary['val/f1']:.4f} / {summary['val/mcc']:.4f}  (threshold 0.5)"),
        ("val AUROC / AUPRC", f"{summary['val/auroc']:.4f} / {summary['val/auprc']:.4f}"),
        ("best checkpoint", summary["best_checkpoint"]),
        ("export", summary["export"]),
        ("time", f"{summary['seconds']:.0f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    return "\n".join(["", "Promoter fine-tuning finished", *(f"  {k:<{width}}  {v}" for k, v in rows)])
