"""Both classification baselines on one data module's splits, as flat ``summary.json`` keys.

The k-mer logistic regression (:mod:`.kmer_lr`) and the small CNN (:mod:`.cnn`) are trained on
(at most ``max_train`` rows of) the train split, tuned or early-stopped on (at most ``max_train``
rows of) val, and scored on the whole test split, or on val when there is no test split. Where
val is too small to choose on (:func:`~bigbird_dna.evaluation.metrics.above_chance_threshold`
at 1 or more: a small set's 10 held-out sequences), the k-mer LR chooses ``K`` and its penalty
by 5-fold cross-validation on train instead (``baseline/kmer_lr/chosen_on``).

Keys (``<split>`` is ``test`` or ``val``): ``baseline/split``, ``baseline/seconds``,
``baseline/train_samples``, ``baseline/eval_samples``; ``baseline/kmer_lr/<split>_<metric>``,
``baseline/kmer_lr/k``, ``baseline/kmer_lr/l2``, ``baseline/kmer_lr/k_max_tried``,
``baseline/kmer_lr/strands`` (``both``: canonical k-mers, or ``given``: oriented),
``baseline/kmer_lr/chosen_on`` (``val`` or ``cross-validation``),
``baseline/kmer_lr/seconds``; ``baseline/cnn/<split>_<metric>``, ``baseline/cnn/epochs``,
``baseline/cnn/best_epoch``, ``baseline/cnn/stopped``, ``baseline/cnn/strands`` (``both`` or
``given``), ``baseline/cnn/seconds``; metrics as in
:mod:`bigbird_dna.evaluation.metrics`. Seconds count training: a CNN trained before the network
(the composition path's judge) counts in ``baseline/cnn/seconds`` and ``baseline/seconds``.
When the baselines cannot run: ``baseline/skipped`` with the reason.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Mapping

import numpy as np
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.baselines.cnn import CNNResult, predict_cnn, train_cnn
from bigbird_dna.evaluation.baselines.kmer_lr import affordable_k, chosen_on, fit_kmer_lr_val_or_cv
from bigbird_dna.evaluation.baselines.kmers import kmer_frequencies
from bigbird_dna.evaluation.baselines.sequences import CodedSet, coded_split
from bigbird_dna.evaluation.metrics import check_label_kind, classification_metrics
from bigbird_dna.runtime.phases import phase

log = logging.getLogger(__name__)

# folds of the k-mer LR's cross-validated choice, where val is too small to choose on
CV_FOLDS = 5
DEFAULTS = {"enabled": True, "max_train": 50000, "cnn_max_epochs": 30, "cnn_max_seconds": 900.0,
            "max_len": None, "kmer_max_k": 6}


def baseline_settings(settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``data.baselines`` settings over :data:`DEFAULTS`; unknown keys are refused."""
    settings = dict(settings or {})
    unknown = sorted(set(settings) - set(DEFAULTS))
    if unknown:
        raise InputError(f"unknown data.baselines key(s) {unknown}; known: {sorted(DEFAULTS)}.")
    merged = {**DEFAULTS, **settings}
    if merged["max_train"] is not None and int(merged["max_train"]) < 2:
        raise InputError(f"data.baselines.max_train={merged['max_train']} must be 2 or more (or null for all).")
    if not 1 <= int(merged["kmer_max_k"]) <= 6:
        raise InputError(f"data.baselines.kmer_max_k={merged['kmer_max_k']} must lie in 1..6.")
    return merged


def _skip(reason: str) -> dict[str, Any]:
    log.warning("classification baselines skipped: %s", reason)
    return {"baseline/skipped": reason}


def baseline_splits(datasets: Mapping[str, Any], settings: Mapping[str, Any] | None = None, seed: int = 0
                    ) -> tuple[CodedSet, CodedSet]:
    """The train and val rows both baselines train and choose on: at most ``data.baselines.max_train``
    of each, drawn with ``seed`` (train) and ``seed + 1`` (val)."""
    cfg = baseline_settings(settings)
    limit = None if cfg["max_train"] is None else int(cfg["max_train"])
    return (coded_split(datasets["train"], limit, seed, cfg["max_len"]),
            coded_split(datasets["val"], limit, seed + 1, cfg["max_len"]))


def train_baseline_cnn(train: CodedSet, val: CodedSet, label_kind: str, settings: Mapping[str, Any] | None = None,
                       device: torch.device | str = "cpu", seed: int = 0, both_strands: bool = True) -> CNNResult:
    """The summary's small CNN on :func:`baseline_splits`' rows, with the ``data.baselines`` limits:
    what :func:`run_baselines` trains, and what it scores when given (``cnn=``) instead."""
    cfg = baseline_settings(settings)
    return train_cnn(train, val, label_kind, device, seed, max_epochs=int(cfg["cnn_max_epochs"]),
                     max_seconds=cfg["cnn_max_seconds"], both_strands=both_strands)


def run_baselines(datasets: Mapping[str, Any], label_kind: str, settings: Mapping[str, Any] | None = None,
                  device: torch.device | str = "cpu", seed: int = 0, both_strands: bool = True,
                  cnn: CNNResult | None = None) -> dict[str, Any]:
    """Train and score both baselines; returns the flat keys listed in the module docstring.

    Args:
        datasets: ``{"train", "val", "test"?}`` datasets of ``(seq, labels [C], ...)`` items (or
            DeepSEA streams, see :func:`~.sequences.coded_split`).
        label_kind: ``binary``, ``multiclass`` or ``multilabel``.
        settings: the ``data.baselines`` config (see :data:`DEFAULTS`).
        device: where to train (the run's device).
        seed: seeds the subsampling and the CNN.
        both_strands: the CNN trains and scores on both strands and the k-mer LR counts canonical
            k-mers (as the model reads both strands when its data flips or averages them); else the
            CNN reads the given strand only and the LR counts oriented k-mers (oriented data, such
            as promoters, where a k-mer and its reverse complement mean different things).
        cnn: a CNN already trained by :func:`train_baseline_cnn` on these settings (the composition
            path's judge, :mod:`~bigbird_dna.tasks.composition_fit`): scored, not trained again.
    """
    cfg = baseline_settings(settings)
    if not cfg["enabled"]:
        return {"baseline/skipped": "disabled (data.baselines.enabled=false)"}
    with phase("baselines") as timing:
        split = "test" if len(datasets.get("test") or ()) > 0 else "val"
        limit = None if cfg["max_train"] is None else int(cfg["max_train"])
        train, val = baseline_splits(datasets, cfg, seed)
        evaluated = val if split == "val" and (limit is None or len(val) >= len(datasets["val"])) \
            else coded_split(datasets[split], None, seed, cfg["max_len"])
        check_label_kind(label_kind, train.labels.shape[1])
        positives = train.labels.sum(0)
        if label_kind != "multilabel" and ((positives == 0) | (positives == len(train))).any():
            timing.detail = "skipped"
            return _skip(f"the {len(train)} train rows used lack a class; no baseline can be fitted")
        out: dict[str, Any] = {"baseline/split": split, "baseline/train_samples": len(train),
                               "baseline/eval_samples": len(evaluated)}
        out.update(_kmer_lr(train, val, evaluated, split, label_kind, device, int(cfg["kmer_max_k"]),
                            oriented=not both_strands, seed=seed))
        out.update(_cnn(train, val, evaluated, split, label_kind, device, seed, cfg, both_strands=both_strands,
                        result=cnn))
        # a judge CNN trained before the network is a baseline's cost too
        out["baseline/seconds"] = round(timing.elapsed() + (cnn.seconds if cnn is not None else 0.0), 1)
        timing.detail = (f"k-mer LR and small CNN trained on {len(train):,} rows, scored on {len(evaluated):,} "
                         f"{split} rows")
    return out


def _prefixed(name: str, split: str, metrics: dict[str, float]) -> dict[str, float]:
    return {f"baseline/{name}/{split}_{key}": value for key, value in metrics.items()}


def _kmer_lr(train: CodedSet, val: CodedSet, evaluated: CodedSet, split: str, kind: str,
             device: torch.device | str, max_k: int, oriented: bool = False, seed: int = 0) -> dict[str, Any]:
    started = time.monotonic()
    max_k = affordable_k(len(train), train.labels.shape[1], device, max_k, oriented=oriented)
    features = [kmer_frequencies(s.codes, max_k, oriented=oriented) for s in (train, val)]
    folds = np.random.default_rng(seed).permutation(len(train)) % CV_FOLDS  # used where val is too small
    model, _ = fit_kmer_lr_val_or_cv(features[0], train.labels, features[1], val.labels, folds, kind, device,
                                     max_k=max_k, oriented=oriented, num_folds=CV_FOLDS)
    choice = chosen_on(val.labels)
    if evaluated is val:
        probs = model.predict(features[1], device)
    else:  # in parts: a large test split's features need not fit in memory at once
        step = 20000
        probs = torch.cat([model.predict(kmer_frequencies(evaluated.codes[lo:lo + step], model.k, oriented=oriented),
                                         device)
                           for lo in range(0, len(evaluated), step)])
    metrics = classification_metrics(probs, torch.from_numpy(evaluated.labels), kind)
    seconds = time.monotonic() - started
    strands = "given" if oriented else "both"
    log.info("k-mer LR baseline: %s k=1..%d, l2=%g (k<=%d tried, chosen on %s), %s AUROC %.4f, %.1f s on %d "
             "train rows", "oriented" if oriented else "canonical", model.k, model.l2, model.k_max_tried, choice,
             split, metrics["auroc"], seconds, len(train))
    return {**_prefixed("kmer_lr", split, metrics), "baseline/kmer_lr/k": model.k, "baseline/kmer_lr/l2": model.l2,
            "baseline/kmer_lr/k_max_tried": model.k_max_tried, "baseline/kmer_lr/strands": strands,
            "baseline/kmer_lr/chosen_on": choice,
            "baseline/kmer_lr/seconds": round(seconds, 1)}


def _cnn(train: CodedSet, val: CodedSet, evaluated: CodedSet, split: str, kind: str, device: torch.device | str,
         seed: int, cfg: dict[str, Any], both_strands: bool = True, result: CNNResult | None = None) -> dict[str, Any]:
    started = time.monotonic()
    if result is None:
        result = train_baseline_cnn(train, val, kind, cfg, device, seed, both_strands)
    else:
        started -= result.seconds  # trained before the network: its training counts here
    metrics = classification_metrics(predict_cnn(result.model, evaluated, kind, torch.device(device), both_strands),
                                     torch.from_numpy(evaluated.labels), kind)
    seconds = time.monotonic() - started
    log.info("small CNN baseline: %d epochs (best %d, stopped by %s), %s AUROC %.4f, %.1f s on %d train rows",
             result.epochs, result.best_epoch, result.stopped, split, metrics["auroc"], seconds, len(train))
    return {**_prefixed("cnn", split, metrics), "baseline/cnn/epochs": result.epochs,
            "baseline/cnn/best_epoch": result.best_epoch, "baseline/cnn/stopped": result.stopped,
            "baseline/cnn/strands": "both" if both_strands else "given",
            "baseline/cnn/seconds": round(seconds, 1)}
