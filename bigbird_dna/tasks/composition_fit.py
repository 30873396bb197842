"""``task.head.composition_fit=first``: fit the head's composition path as a k-mer logistic
regression on the training split, before the network trains (stacking).

The path (:class:`~bigbird_dna.model.composition.FittedKmerComposition`) counts oriented k-mers of
``k = 1..K`` on token ids; the LR here counts the same numbers on the same sequences
(:func:`~bigbird_dna.evaluation.baselines.kmers.kmer_frequencies` with ``oriented=True``), chooses
``k <= K`` and its L2 penalty on the validation split, as the k-mer LR baseline does, and its
standardiser, weights and bias become the path's. Data that is read on both strands (strand
flips in training or both-strand evaluation) is fitted on the training sequences and their
reverse complements. The same ``k`` and penalty are then fitted once per fold without that fold
(:func:`~bigbird_dna.model.composition.sequence_folds`, a sequence and its reverse complement in
one fold): the out-of-fold logits the network trains on. Under DDP every rank fits, then takes
rank 0's numbers.

Where composition says nothing, the fit is not kept: unless the LR's validation AUROC exceeds
chance by 3 standard errors of a random scorer's AUROC on those validation labels
(:func:`~bigbird_dna.evaluation.metrics.above_chance_threshold`), the path stays at zero and the
run trains as without it. Offsets fitted to noise (the best of some thirty fits on val) otherwise perturb what
the network learns: on a two-motif order task, where k-mer counts are equal in both classes, a
kept fit stopped a seed learning the rule that it learns without the path.

Where motifs, not composition, carry the task, the fit is not kept either (``judge="cnn"``, the
default): the summary's small CNN (:func:`~bigbird_dna.evaluation.baselines.run.train_baseline_cnn`)
trains first, and the path is kept only if the LR's validation AUROC is at least the CNN's. A fixed
composition prior there is noise the network must learn to undo: on a planted CTCF task (LR 0.93,
CNN 0.997) the kept path cost 0.001 test AUROC. The run's summary then scores that CNN rather than
training another. With a cross-validated choice (too few validation sequences to score a CNN on)
there is no judge.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from bigbird_dna.data.labelled import LabelledDataModule
from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.baselines.cnn import CNNResult, predict_cnn
from bigbird_dna.evaluation.baselines.kmer_lr import (
    KmerLogisticRegression,
    chosen_on,
    fit_kmer_lr_val_or_cv,
    fit_without_each_fold,
)
from bigbird_dna.evaluation.baselines.kmers import feature_slices, kmer_frequencies
from bigbird_dna.evaluation.baselines.run import baseline_splits, train_baseline_cnn
from bigbird_dna.evaluation.baselines.sequences import CodedSet, coded_split, reverse_complement_codes
from bigbird_dna.evaluation.metrics import above_chance_threshold, classification_metrics
from bigbird_dna.evaluation.reference import reads_both_strands
from bigbird_dna.model.composition import BASE_IDS, CROSS_FIT_FOLDS, FittedKmerComposition, sequence_folds


def _with_reverse_complements(data: CodedSet) -> CodedSet:
    codes = reverse_complement_codes(data.codes, data.lengths)
    return CodedSet(np.concatenate([data.codes, codes]), np.concatenate([data.lengths, data.lengths]),
                    np.concatenate([data.labels, data.labels]))


def code_folds(codes: np.ndarray, rows_per_chunk: int = 4096) -> np.ndarray:
    """The :func:`~bigbird_dna.model.composition.sequence_folds` of coded rows ``uint8 [N, L]``
    (4 = N or padding): ``int64 [N]``, the folds the path gives the same sequences as token ids."""
    to_ids = torch.tensor([*BASE_IDS, 0])  # 0: a special token, which starts no k-mer
    return np.concatenate([sequence_folds(to_ids[torch.from_numpy(codes[lo:lo + rows_per_chunk]).long()]).numpy()
                           for lo in range(0, len(codes), rows_per_chunk)] or [np.zeros(0, np.int64)])


def out_of_fold_fits(model: KmerLogisticRegression, features: np.ndarray, labels: np.ndarray,
                     folds: np.ndarray) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """``model``'s ``k``, penalty and standardiser fitted once per fold without that fold's rows:
    ``(weights [F', C] each, biases [C] each)``, :data:`CROSS_FIT_FOLDS` of them. ``features
    [N, >= F']`` and ``labels [N, C]`` are the training rows, ``folds [N]`` their folds."""
    columns = feature_slices(model.k, model.oriented)[model.k]
    device = model.weight.device
    x = model.standardiser(torch.from_numpy(np.ascontiguousarray(features[:, columns])).to(device))
    y = torch.from_numpy(labels).to(device)
    held_out = [torch.from_numpy(folds == fold).to(device) for fold in range(CROSS_FIT_FOLDS)]
    fits = fit_without_each_fold(x, y, held_out, model.kind, model.l2, [(model.weight, model.bias)] * CROSS_FIT_FOLDS)
    return [w.cpu() for w, _ in fits], [b.cpu() for _, b in fits]


JUDGES = ("cnn", "chance")


def judge_cnn(datamodule: LabelledDataModule, device: torch.device | str, both_strands: bool
              ) -> tuple[CNNResult, float]:
    """The summary's small CNN trained on ``datamodule``'s rows (its ``data.baselines`` settings and
    seed), and its validation AUROC."""
    train, val = baseline_splits(datamodule.datasets, datamodule.baselines, datamodule.seed)
    kind = datamodule.label_kind
    cnn = train_baseline_cnn(train, val, kind, datamodule.baselines, device, datamodule.seed, both_strands)
    probs = predict_cnn(cnn.model, val, kind, torch.device(device), both_strands)
    return cnn, float(classification_metrics(probs, torch.from_numpy(val.labels), kind)["auroc"])


def fit_composition_path(path: FittedKmerComposition, datamodule: Any, max_bases: int | None = None,
                         device: torch.device | str = "cpu", judge: str = "cnn",
                         judge_device: torch.device | str | None = None) -> dict[str, Any]:
    """Fit ``path`` on ``datamodule``'s train split, choosing ``k`` and the penalty on val (or, for
    a small set, by cross-validation on train).

    Args:
        path: the head's fitted composition path.
        datamodule: a :class:`~bigbird_dna.data.labelled.LabelledDataModule` with ``train`` and
            ``val`` splits of in-memory sequences.
        max_bases: the model's longest input in bases; longer sequences are counted on their first
            ``max_bases`` bases, as the path sees them.
        device: where the LR trains.
        judge: ``cnn``: keep an above-chance fit only if its val AUROC is at least the small CNN's;
            ``chance``: keep every above-chance fit.
        judge_device: where the CNN trains (``None``: ``device``).

    Returns:
        What was fitted: ``{"k", "l2", "chosen_on", "val_auroc", "kept_above", "cnn_val_auroc",
        "kept", "rows", "both_strands", "folds", "seconds", "cnn"}``; ``kept`` is False when the val
        AUROC is not above ``kept_above`` or below ``cnn_val_auroc`` (the path then stays at zero,
        but counts as fitted); ``cnn_val_auroc`` is None where no CNN judged; ``cnn`` is the judge
        (a :class:`~bigbird_dna.evaluation.baselines.cnn.CNNResult`, not a plain value) or None;
        ``folds`` counts the out-of-fold fits (0 when not kept). Where the validation sequences
        are too few for any fit to pass the chance threshold (a small set's 10), ``k`` and the
        penalty are chosen, and the fit judged, by cross-validation on train instead
        (``chosen_on``; ``val_auroc`` is then the cross-validated AUROC, and the threshold that of
        the training labels).

    Data without in-memory train and val splits (a run without validation, or streamed data), or
    too small for even that, gets no fit: the path stays at zero, counts as fitted, and
    ``{"skipped": reason}`` is returned.
    """
    if judge not in JUDGES:
        raise InputError(f"task.composition_judge={judge!r} is not one of {JUDGES}.")
    datasets = getattr(datamodule, "datasets", None) or {}
    if not isinstance(datamodule, LabelledDataModule) or not datasets.get("train") or not datasets.get("val"):
        path.fitted.fill_(True)
        return {"skipped": "this data has no in-memory train and val splits to fit and choose it on"}
    started = time.monotonic()
    train = coded_split(datasets["train"], None, 0, max_bases, keep="start")  # the bases the model reads
    val = coded_split(datasets["val"], None, 1, max_bases, keep="start")
    choice = chosen_on(val.labels)
    kept_above = above_chance_threshold(val.labels if choice == "val" else train.labels)
    if kept_above >= 1:  # too few sequences to show a fit above chance, even cross-validated on train
        path.fitted.fill_(True)
        return {"skipped": f"its {len(train)} training and {len(val)} validation sequences could not show a "
                           "fit above chance"}
    both = reads_both_strands(datamodule)
    if both:
        train = _with_reverse_complements(train)
    features = kmer_frequencies(train.codes, path.max_k, oriented=True)
    folds = code_folds(train.codes)
    model, fold_fits = fit_kmer_lr_val_or_cv(features, train.labels, kmer_frequencies(val.codes, path.max_k,
                                             oriented=True), val.labels, folds, datamodule.label_kind, device,
                                             max_k=path.max_k, oriented=True, num_folds=CROSS_FIT_FOLDS)
    kept = float(model.val_metric) > kept_above
    cnn, cnn_auroc = None, None
    if kept and judge == "cnn" and choice == "val":
        cnn, cnn_auroc = judge_cnn(datamodule, device if judge_device is None else judge_device, both)
        kept = float(model.val_metric) >= cnn_auroc
    if not kept:
        fold_fits = [], []
    elif fold_fits is None:  # chosen on val: the chosen setting's out-of-fold fits
        fold_fits = out_of_fold_fits(model, features, train.labels, folds)
    scaler = model.standardiser
    weight = model.weight.cpu() if kept else torch.zeros_like(model.weight.cpu())
    bias = model.bias.cpu() if kept else torch.zeros_like(model.bias.cpu())
    path.load_fit(scaler.mean.cpu(), scaler.std.cpu(), weight, bias, *fold_fits)
    if dist.is_available() and dist.is_initialized():
        for buffer in path.buffers():  # bool as uint8: not every backend reduces bool
            wire = torch.uint8 if buffer.dtype == torch.bool else buffer.dtype
            synced = buffer.to(_collective_device(buffer), wire)
            dist.broadcast(synced, 0)
            buffer.copy_(synced.to(buffer.device, buffer.dtype))
    return {"k": model.k, "l2": model.l2, "chosen_on": choice, "val_auroc": round(float(model.val_metric), 4),
            "kept_above": round(kept_above, 4), "kept": kept, "rows": len(train),
            "cnn_val_auroc": None if cnn_auroc is None else round(cnn_auroc, 4),
            "both_strands": both, "folds": len(fold_fits[0]), "seconds": round(time.monotonic() - started, 1),
            "cnn": cnn}


def describe_fit(fit: dict[str, Any]) -> str:
    """One line for the run's log: what :func:`fit_composition_path` fitted, and whether it was kept."""
    name = "task.head.composition_fit=first"
    if "skipped" in fit:
        return f"composition path not fitted ({name}): {fit['skipped']}; it stays at zero."
    chosen = "val" if fit["chosen_on"] == "val" else "cross-validated"
    strands = " with their reverse complements" if fit["both_strands"] else ""
    head = (f"composition path fitted first ({name}): a k-mer LR on oriented k=1..{fit['k']}, l2={fit['l2']:g}, "
            f"{chosen} AUROC {fit['val_auroc']:.4f}, {fit['rows']:,} training rows{strands}, {fit['seconds']} s; ")
    judged = fit["cnn_val_auroc"] is not None
    if fit["kept"]:
        return (head + (f"at least the small CNN's {fit['cnn_val_auroc']:.4f}; " if judged else "")
                + f"fixed from here, the network learns the rest (training on the logits of {fit['folds']} "
                  "out-of-fold fits).")
    if judged:
        return (head + f"below the small CNN's {fit['cnn_val_auroc']:.4f} (motifs, not composition, carry this "
                "task: task.composition_judge), so the path stays at zero.")
    return head + f"not above chance ({fit['kept_above']:.4f}), so the path stays at zero."


def _collective_device(buffer: torch.Tensor) -> torch.device:
    """The device a collective needs: the rank's GPU under NCCL, else the buffer's own."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return buffer.device
