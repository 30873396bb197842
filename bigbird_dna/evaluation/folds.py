"""The splits of an evaluation: stratified k-fold cross-validation, or one fixed split trained with
several seeds, each with a validation share held out of its training part for early stopping.

Indices are 0-based positions in one pool of labelled sequences; ``classes`` is ``int [N]``, each
sequence's class index.

- :func:`stratified_folds`: every sequence in exactly one test fold. The members of each class are
  shuffled (seeded) and dealt round-robin over the folds, the classes one after another, so fold
  sizes, and each class's count per fold, differ by at most one.
- :func:`validation_size`: the **validation rule**: of a training part of ``n`` sequences, the larger
  of 10% and 50 sequences is held out, but never more than a quarter of ``n``; held out per class in
  proportion (at least one of each class, :func:`~bigbird_dna.data.promoter.datamodule.stratified_holdout`).
  So 1,000 training sequences keep 100 for validation, 300 keep 50, 120 keep 30.
- :func:`check_class_counts`: refuses classes too small for the folds (one sequence in every test
  fold and two in every training part: one to train on, one to validate on).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from bigbird_dna.data.promoter.datamodule import stratified_holdout
from bigbird_dna.errors import InputError

VALIDATION_FRACTION = 0.1
VALIDATION_MIN = 50
VALIDATION_MAX_FRACTION = 0.25


@dataclass
class Split:
    """One training run's sequences: ``train``, ``val`` and ``test`` are sorted ``int64`` indices
    into the pool; ``seed`` is the run's seed; ``name`` names its folder (``fold_1``, ``seed_0``)."""

    name: str
    seed: int
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


def stratified_folds(classes: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """``int64 [N]``: the test fold (``0..folds-1``) of each sequence (see the module docstring)."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(np.flatnonzero(classes == c)) for c in np.unique(classes)])
    assignment = np.empty(len(classes), dtype=np.int64)
    assignment[order] = np.arange(len(order)) % folds
    return assignment


def validation_size(n: int) -> int:
    """Sequences of a training part of ``n`` to validate on: ``max(10% of n, 50)``, at most ``n / 4``."""
    return min(max(math.ceil(VALIDATION_FRACTION * n), VALIDATION_MIN), int(VALIDATION_MAX_FRACTION * n))


def hold_out_validation(indices: np.ndarray, classes: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, val)``: :func:`validation_size` of ``indices``, stratified by class and seeded."""
    share = max(validation_size(len(indices)), 1) / len(indices)
    kept, held_out = stratified_holdout(classes[indices], share, seed)
    return indices[kept], indices[held_out]


def min_per_class(folds: int) -> int:
    """The fewest sequences a class may have for ``folds``-fold cross-validation: one in every test
    fold, and two left in every training part."""
    n = folds
    while n - math.ceil(n / folds) < 2:
        n += 1
    return n


def check_class_counts(counts: dict[str, int], folds: int) -> None:
    """Refuse classes too small for ``folds``-fold cross-validation (:class:`InputError`)."""
    need = min_per_class(folds)
    small = {name: count for name, count in counts.items() if count < need}
    if small:
        raise InputError(f"too few sequences per class for {folds}-fold cross-validation: {small}; each class needs "
                         f"at least {need} (one in every test fold, two in every training part). Use fewer --folds "
                         "or add sequences.")


def kfold_splits(classes: np.ndarray, folds: int, seed: int) -> list[Split]:
    """``folds`` splits: fold ``i`` tests on its share and trains (and validates) on the others; every
    fold's run has seed ``seed``."""
    assignment = stratified_folds(classes, folds, seed)
    splits = []
    for fold in range(folds):
        test = np.flatnonzero(assignment == fold)
        train, val = hold_out_validation(np.flatnonzero(assignment != fold), classes, seed + fold)
        splits.append(Split(f"fold_{fold + 1}", seed, train, val, test))
    return splits


def seed_splits(train: np.ndarray, val: np.ndarray | None, test: np.ndarray, classes: np.ndarray,
                seeds: list[int], split_seed: int) -> list[Split]:
    """One fixed split trained once per seed: ``val`` as given, else held out of ``train`` once
    (with ``split_seed``), so only the runs' seeds differ."""
    if val is None or len(val) == 0:
        train, val = hold_out_validation(train, classes, split_seed)
    return [Split(f"seed_{seed}", seed, np.sort(train), np.sort(val), np.sort(test)) for seed in seeds]
