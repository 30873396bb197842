"""k-mer logistic regression: a linear model on standardised k-mer frequencies (:mod:`.kmers`:
canonical, or oriented for data read on a defined strand), fitted by full-batch L-BFGS in torch.

One code path for every label kind: the model gives logits ``[N, C]``; the loss is a softmax
cross-entropy for ``multiclass`` and independent sigmoids (BCE) for ``binary`` (``C = 1``) and
``multilabel``; the objective ``mean loss + l2 / 2 * ||W||^2`` (bias not penalised) is convex.
``K`` (features of ``k = 1..K``) and ``l2`` are chosen on the validation set by its main metric
(:func:`~bigbird_dna.evaluation.metrics.classification_metrics` ``auroc``); ties keep the smaller ``K`` and the stronger
penalty. Within a ``K`` the fits run from the strongest to the weakest penalty, each starting from
the previous solution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from bigbird_dna.evaluation.baselines.kmers import MAX_K, feature_slices, num_features
from bigbird_dna.evaluation.baselines.objective import loss_of, probabilities
from bigbird_dna.evaluation.metrics import above_chance_threshold, classification_metrics

# oriented 5- and 6-mers on a few thousand rows want penalties above 0.1 (A. thaliana promoters: 0.3-1)
L2_GRID = (1.0, 3e-1, 1e-1, 1e-2, 1e-3, 1e-4)


@dataclass
class Standardiser:
    """Per-column mean and standard deviation of the training features (a constant column -> 0)."""

    mean: torch.Tensor  # [F]
    std: torch.Tensor  # [F]

    @classmethod
    def fit(cls, x: torch.Tensor) -> "Standardiser":
        mean, std = x.mean(0), x.std(0)
        return cls(mean, torch.where(std > 1e-8, std, torch.ones_like(std)))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


def fit_linear(x: torch.Tensor, labels: torch.Tensor, kind: str, l2: float, max_iter: int = 150,
               init: tuple[torch.Tensor, torch.Tensor] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Minimise ``mean loss(x @ W + b, labels) + l2 / 2 * ||W||^2`` with L-BFGS (strong Wolfe).

    Args:
        x: ``[N, F]`` features (standardised); labels: ``[N, C]`` 0/1 float.
        kind: ``binary``, ``multiclass`` or ``multilabel`` (see :func:`~.objective.loss_of`).
        init: ``(W [F, C], b [C])`` to start from (default zeros).

    Returns:
        ``(W [F, C], b [C])``.
    """
    weight = (init[0].clone() if init else x.new_zeros(x.shape[1], labels.shape[1])).requires_grad_(True)
    bias = (init[1].clone() if init else x.new_zeros(labels.shape[1])).requires_grad_(True)
    optimizer = torch.optim.LBFGS([weight, bias], lr=1.0, max_iter=max_iter, history_size=20,
                                  tolerance_grad=1e-6, tolerance_change=1e-10, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        objective = loss_of(x @ weight + bias, labels, kind) + 0.5 * l2 * weight.square().sum()
        objective.backward()
        return objective

    optimizer.step(closure)
    return weight.detach(), bias.detach()


@dataclass
class KmerLogisticRegression:
    """A fitted model: ``k`` (features of ``1..k``, canonical or ``oriented``), ``l2``, the
    standardiser and the weights."""

    k: int
    l2: float
    val_metric: float
    standardiser: Standardiser
    weight: torch.Tensor  # [F_k, C]
    bias: torch.Tensor  # [C]
    kind: str
    k_max_tried: int
    oriented: bool = False

    def predict(self, features: np.ndarray, device: torch.device | str = "cpu", rows: int = 65536) -> torch.Tensor:
        """Probabilities ``[N, C]`` (CPU) from k-mer frequencies ``[N, >= F_k]``, ``rows`` at a time."""
        columns = feature_slices(self.k, self.oriented)[self.k]
        out = []
        for lo in range(0, len(features), rows):
            x = self.standardiser(torch.from_numpy(features[lo:lo + rows, columns]).to(device))
            out.append(probabilities(x @ self.weight + self.bias, self.kind).cpu())
        return torch.cat(out) if out else torch.zeros(0, self.weight.shape[1])


def affordable_k(rows: int, outputs: int, device: torch.device | str = "cpu", max_k: int = MAX_K,
                 max_macs: float | None = None, oriented: bool = False) -> int:
    """The largest ``K <= max_k`` whose objective costs at most ``max_macs`` multiply-adds
    (``rows * num_features(K, oriented) * outputs`` per objective evaluation, of which the grid's
    fits make a few thousand; default 1.5e8 on CPU, 1e10 on a GPU); at least 1. On CPU, 50k binary
    rows fit up to ``K = 6`` canonical and ``K = 5`` oriented; 919 DeepSEA labels on 1k rows up to ``K = 3``."""
    if max_macs is None:
        max_macs = 1e10 if torch.device(device).type == "cuda" else 1.5e8
    fits = [k for k in range(1, max_k + 1) if rows * num_features(k, oriented) * outputs <= max_macs]
    return max(fits, default=1)


def fit_kmer_lr(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray, kind: str,
                device: torch.device | str = "cpu", max_k: int = MAX_K, l2_grid: tuple[float, ...] = L2_GRID,
                max_macs: float | None = None, oriented: bool = False) -> KmerLogisticRegression:
    """Fit every ``(K, l2)`` of the grid on train, keep the best on val.

    Args:
        train_x, val_x: ``float32 [N, >= num_features(K, oriented)]`` k-mer frequencies, ``K`` the
            largest :func:`affordable_k` (more columns are ignored).
        train_y, val_y: ``float32 [N, C]`` 0/1 labels.
        kind: the label kind.
        max_macs: the budget of :func:`affordable_k`: larger ``K`` are not tried.
        oriented: the features are oriented (:func:`~.kmers.kmer_frequencies`), not canonical.
    """
    device = torch.device(device)
    max_k = min(max_k, affordable_k(len(train_x), train_y.shape[1], device, max_k, max_macs, oriented))
    slices = feature_slices(max_k, oriented)
    x_all = torch.from_numpy(np.ascontiguousarray(train_x[:, slices[max_k]])).to(device)
    standardiser = Standardiser.fit(x_all)
    x_all = standardiser(x_all)
    y = torch.from_numpy(train_y).to(device)
    val_y_t = torch.from_numpy(val_y)
    best: KmerLogisticRegression | None = None
    tried = 1
    for k, columns in slices.items():
        tried = k
        x = x_all[:, columns]
        scaler = Standardiser(standardiser.mean[columns], standardiser.std[columns])
        val = scaler(torch.from_numpy(val_x[:, columns]).to(device))
        init = None
        for l2 in sorted(l2_grid, reverse=True):
            init = fit_linear(x, y, kind, l2, init=init)
            metric = classification_metrics(probabilities(val @ init[0] + init[1], kind), val_y_t, kind)["auroc"]
            metric = -math.inf if math.isnan(metric) else metric
            if best is None or metric > best.val_metric:
                best = KmerLogisticRegression(k, l2, metric, scaler, *init, kind, tried, oriented)
    assert best is not None
    best.k_max_tried = tried
    return best


def fit_kmer_lr_cv(train_x: np.ndarray, train_y: np.ndarray, folds: np.ndarray, kind: str,
                   device: torch.device | str = "cpu", max_k: int = MAX_K, l2_grid: tuple[float, ...] = L2_GRID,
                   oriented: bool = False, num_folds: int | None = None,
                   ) -> tuple[KmerLogisticRegression, list[torch.Tensor], list[torch.Tensor]]:
    """:func:`fit_kmer_lr` for a set too small to hold out a validation split: ``(K, l2)`` is chosen
    by the AUROC of the out-of-fold logits over every training row, then fitted on them all.

    Args:
        train_x: ``float32 [N, >= num_features(max_k, oriented)]`` k-mer frequencies.
        train_y: ``float32 [N, C]`` 0/1 labels.
        folds: ``int [N]``, each row's fold ``0..F-1``; every fold's rows are scored by the fit
            on the others (one standardiser, fitted on all rows).
        num_folds: ``F`` (default ``folds.max() + 1``); a fold without rows gets the fit on all.

    Returns:
        ``(model, fold_weights, fold_biases)``: the full fit, whose ``val_metric`` is the
        cross-validated AUROC, and the chosen setting's ``F`` out-of-fold fits (``[F', C]`` and
        ``[C]`` each, on CPU).
    """
    device = torch.device(device)
    max_k = min(max_k, affordable_k(len(train_x), train_y.shape[1], device, max_k, None, oriented))
    slices = feature_slices(max_k, oriented)
    x_all = torch.from_numpy(np.ascontiguousarray(train_x[:, slices[max_k]])).to(device)
    standardiser = Standardiser.fit(x_all)
    x_all, y = standardiser(x_all), torch.from_numpy(train_y).to(device)
    held_out = [torch.from_numpy(folds == fold).to(device) for fold in range(num_folds or int(folds.max()) + 1)]
    best, best_metric, best_folds = None, -math.inf, None
    for k, columns in slices.items():
        x = x_all[:, columns]
        inits: list[tuple[torch.Tensor, torch.Tensor] | None] = [None] * len(held_out)
        for l2 in sorted(l2_grid, reverse=True):
            inits = fit_without_each_fold(x, y, held_out, kind, l2, inits)
            logits = torch.zeros_like(y)
            for rows, (weight, bias) in zip(held_out, inits):
                logits[rows] = x[rows] @ weight + bias
            metric = classification_metrics(probabilities(logits, kind).cpu(), y.cpu(), kind)["auroc"]
            metric = -math.inf if math.isnan(metric) else metric
            if best is None or metric > best_metric:
                best, best_metric, best_folds = (k, l2), metric, inits
    assert best is not None and best_folds is not None
    k, l2 = best
    columns = slices[k]
    weight, bias = fit_linear(x_all[:, columns], y, kind, l2)
    scaler = Standardiser(standardiser.mean[columns], standardiser.std[columns])
    model = KmerLogisticRegression(k, l2, best_metric, scaler, weight, bias, kind, max_k, oriented)
    return model, [w.cpu() for w, _ in best_folds], [b.cpu() for _, b in best_folds]


Fit = tuple[torch.Tensor, torch.Tensor]  # (weight [F, C], bias [C])


def fit_without_each_fold(x: torch.Tensor, y: torch.Tensor, held_out: list[torch.Tensor], kind: str, l2: float,
                          inits: list[Fit | None]) -> list[Fit]:
    """One :func:`fit_linear` per fold on the rows outside it: ``x [N, F]`` standardised, ``y [N, C]``,
    ``held_out`` bool ``[N]`` masks (one per fold), ``inits`` a start per fold (or ``None``)."""
    return [fit_linear(x[~rows], y[~rows], kind, l2, init=init) for rows, init in zip(held_out, inits)]


def chosen_on(val_y: np.ndarray) -> str:
    """Where ``K`` and ``l2`` are chosen: ``"val"``, or ``"cross-validation"`` on train where the
    validation labels ``[N, C]`` are too few for any fit to show an AUROC above chance
    (:func:`~bigbird_dna.evaluation.metrics.above_chance_threshold` reaches 1)."""
    return "val" if above_chance_threshold(val_y) < 1 else "cross-validation"


def fit_kmer_lr_val_or_cv(train_x: np.ndarray, train_y: np.ndarray, val_x: np.ndarray, val_y: np.ndarray,
                          folds: np.ndarray, kind: str, device: torch.device | str = "cpu", max_k: int = MAX_K,
                          oriented: bool = False, num_folds: int | None = None,
                          ) -> tuple[KmerLogisticRegression, tuple[list[torch.Tensor], list[torch.Tensor]] | None]:
    """:func:`fit_kmer_lr` chosen on val, or :func:`fit_kmer_lr_cv` on ``folds`` of train where
    :func:`chosen_on` says val is too small. Returns ``(model, fold_fits)``: ``fold_fits`` the
    cross-validation's out-of-fold fits, ``None`` when chosen on val. Shapes as those functions'."""
    if chosen_on(val_y) == "val":
        return fit_kmer_lr(train_x, train_y, val_x, val_y, kind, device, max_k=max_k, oriented=oriented), None
    model, weights, biases = fit_kmer_lr_cv(train_x, train_y, folds, kind, device, max_k=max_k, oriented=oriented,
                                            num_folds=num_folds)
    return model, (weights, biases)
