"""``task.head.composition_fit=first``: fit the head's composition path as a k-mer logistic
regression on the training split, before the network trains (stacking).

The path (:class:`~bigbird_dna.model.composition.FittedKmerComposition`) counts oriented k-mers of
``k = 1..K`` on token ids; the LR here counts the same numbers on the same sequences
(:func:`~bigbird_dna.evaluation.baselines.kmers.kmer_frequencies` with ``oriented=True``), chooses
``k <= K`` and its L2 penalty on the validation split, as the k-mer LR baseline does, and its
standardiser, weights and bias become the path's. Data that is read on both strands (strand
flips in training or both-strand evaluation) is fitted on the training sequences and their
reverse complements. Under DDP every rank fits, then takes rank 0's numbers.

Where composition says nothing, the fit is not kept: unless the LR's validation AUROC exceeds
chance by :data:`KEEP_STANDARD_ERRORS` standard errors of a random scorer's AUROC on those
validation labels (:func:`chance_standard_error`), the path stays at zero and the run trains as
without it. Offsets fitted to noise (the best of some thirty fits on val) otherwise perturb what
the network learns: on a two-motif order task, where k-mer counts are equal in both classes, a
kept fit stopped a seed learning the rule that it learns without the path.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from bigbird_dna.data.labelled import LabelledDataModule
from bigbird_dna.evaluation.baselines.kmer_lr import fit_kmer_lr
from bigbird_dna.evaluation.baselines.kmers import kmer_frequencies
from bigbird_dna.evaluation.baselines.sequences import CodedSet, coded_split, reverse_complement_codes
from bigbird_dna.evaluation.reference import reads_both_strands
from bigbird_dna.model.composition import FittedKmerComposition

# the fit is kept when its val AUROC is above 0.5 + this many chance standard errors
KEEP_STANDARD_ERRORS = 3.0


def chance_standard_error(labels: np.ndarray) -> float:
    """The standard deviation of a random scorer's AUROC, ``sqrt((P + N + 1) / (12 P N))`` for
    ``P`` positives and ``N`` negatives (Mann-Whitney under the null), the largest over the label
    columns of ``labels [rows, C]`` (0/1); ``inf`` when a column lacks a class."""
    positives = labels.sum(0)
    negatives = len(labels) - positives
    if (positives == 0).any() or (negatives == 0).any():
        return float("inf")
    return float(np.sqrt((positives + negatives + 1) / (12 * positives * negatives)).max())


def _with_reverse_complements(data: CodedSet) -> CodedSet:
    codes = reverse_complement_codes(data.codes, data.lengths)
    return CodedSet(np.concatenate([data.codes, codes]), np.concatenate([data.lengths, data.lengths]),
                    np.concatenate([data.labels, data.labels]))


def fit_composition_path(path: FittedKmerComposition, datamodule: Any, max_bases: int | None = None,
                         device: torch.device | str = "cpu") -> dict[str, Any]:
    """Fit ``path`` on ``datamodule``'s train split, choosing ``k`` and the penalty on val.

    Args:
        path: the head's fitted composition path.
        datamodule: a :class:`~bigbird_dna.data.labelled.LabelledDataModule` with ``train`` and
            ``val`` splits of in-memory sequences.
        max_bases: the model's longest input in bases; longer sequences are counted on their first
            ``max_bases`` bases, as the path sees them.
        device: where the LR trains.

    Returns:
        What was fitted: ``{"k", "l2", "val_auroc", "kept_above", "kept", "rows", "both_strands",
        "seconds"}``; ``kept`` is False when the val AUROC is not above ``kept_above`` (the path
        then stays at zero, but counts as fitted).

    Data without in-memory train and val splits (a run without validation, or streamed data), or
    with too few validation sequences for any fit to pass the chance threshold, gets no fit: the
    path stays at zero, counts as fitted, and ``{"skipped": reason}`` is returned.
    """
    datasets = getattr(datamodule, "datasets", None) or {}
    if not isinstance(datamodule, LabelledDataModule) or not datasets.get("train") or not datasets.get("val"):
        path.fitted.fill_(True)
        return {"skipped": "this data has no in-memory train and val splits to fit and choose it on"}
    started = time.monotonic()
    train = coded_split(datasets["train"], None, 0, max_bases)
    val = coded_split(datasets["val"], None, 1, max_bases)
    kept_above = 0.5 + KEEP_STANDARD_ERRORS * chance_standard_error(val.labels)
    if kept_above >= 1:
        path.fitted.fill_(True)
        return {"skipped": f"its {len(val)} validation sequences could not show a fit above chance"}
    both = reads_both_strands(datamodule)
    if both:
        train = _with_reverse_complements(train)
    features = [kmer_frequencies(s.codes, path.max_k, oriented=True) for s in (train, val)]
    model = fit_kmer_lr(features[0], train.labels, features[1], val.labels, datamodule.label_kind, device,
                        max_k=path.max_k, oriented=True)
    kept = float(model.val_metric) > kept_above
    scaler = model.standardiser
    weight = model.weight.cpu() if kept else torch.zeros_like(model.weight.cpu())
    bias = model.bias.cpu() if kept else torch.zeros_like(model.bias.cpu())
    path.load_fit(scaler.mean.cpu(), scaler.std.cpu(), weight, bias)
    if dist.is_available() and dist.is_initialized():
        for buffer in path.buffers():  # bool as uint8: not every backend reduces bool
            wire = torch.uint8 if buffer.dtype == torch.bool else buffer.dtype
            synced = buffer.to(_collective_device(buffer), wire)
            dist.broadcast(synced, 0)
            buffer.copy_(synced.to(buffer.device, buffer.dtype))
    return {"k": model.k, "l2": model.l2, "val_auroc": round(float(model.val_metric), 4),
            "kept_above": round(kept_above, 4), "kept": kept, "rows": len(train),
            "both_strands": both, "seconds": round(time.monotonic() - started, 1)}


def _collective_device(buffer: torch.Tensor) -> torch.device:
    """The device a collective needs: the rank's GPU under NCCL, else the buffer's own."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return buffer.device
