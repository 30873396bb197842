"""Which runs an evaluation makes, and their manifest.

- **k-fold** (``--folds K``, the default with K = 5): the dataset's train and val sequences are
  pooled and cut into K stratified folds (:func:`~bigbird_dna.evaluation.folds.kfold_splits`); a test
  split the dataset has is set aside (counted in the report, never trained or scored on).
- **seeds** (``--seeds S ...``): the dataset's own train and test splits, one run per seed. The
  validation set is the dataset's val split, or one stratified share of train held out with
  ``--seed``, the same for every seed (:func:`~bigbird_dna.evaluation.folds.seed_splits`).

Both refuse, as an :class:`InputError`, what cannot be evaluated: classes too small for the folds,
``--seeds`` on a dataset without a test split, a test split that lacks a class.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.evaluate.inputs import LabelledPool
from bigbird_dna.evaluation.folds import (
    VALIDATION_FRACTION,
    VALIDATION_MAX_FRACTION,
    VALIDATION_MIN,
    check_class_counts,
    kfold_splits,
    seed_splits,
)

DEFAULT_FOLDS = 5
VALIDATION_RULE = (f"a stratified share of each training part: max({VALIDATION_FRACTION:.0%}, {VALIDATION_MIN} "
                   f"sequences), at most {VALIDATION_MAX_FRACTION:.0%} of it")


def plan_splits(pool: LabelledPool, folds: int | None, seeds: list[int] | None, seed: int) -> dict[str, Any]:
    """The runs of an evaluation: ``{"mode", "folds" or "seeds", "seed", "description", "validation",
    "pooled" (int64 indices of the sequences evaluated), "set_aside" ({split: count}), "splits"}``."""
    if seeds is not None:
        return _seed_plan(pool, seeds, seed)
    folds = DEFAULT_FOLDS if folds is None else folds
    pooled = pool.indices("train", "val")
    check_class_counts(pool.counts(pooled), folds)
    splits = kfold_splits(pool.classes[pooled], folds, seed)
    for split in splits:  # fold indices are positions in `pooled`
        split.train, split.val, split.test = pooled[split.train], pooled[split.val], pooled[split.test]
    set_aside = {"test": int(len(pool.indices("test")))} if len(pool.indices("test")) else {}
    aside = f"; the dataset's test split ({set_aside['test']} sequences) set aside" if set_aside else ""
    return {"mode": "kfold", "folds": folds, "seed": seed,
            "description": f"{folds}-fold stratified cross-validation (seed {seed}) of {len(pooled)} pooled "
                           f"{'train and val' if len(pool.indices('val')) else 'train'} sequences{aside}",
            "validation": VALIDATION_RULE, "pooled": pooled, "set_aside": set_aside, "splits": splits}


def _seed_plan(pool: LabelledPool, seeds: list[int], seed: int) -> dict[str, Any]:
    test = pool.indices("test")
    if not len(test):
        raise InputError(f"--seeds needs a dataset with its own test split ({pool.source['train']} has none: "
                         "ROOT/test/ or test.csv); use --folds for cross-validation instead.")
    missing = [name for name, count in pool.counts(test).items() if count == 0]
    if missing:
        raise InputError(f"the test split {pool.source['test']} has no sequence of class(es) {missing}; its "
                         "metrics would be undefined. Use --folds for cross-validation instead.")
    train, val = pool.indices("train"), pool.indices("val")
    need = 1 if len(val) else 2  # one to train on, and one to hold out for validation without a val split
    small = {name: count for name, count in pool.counts(train).items() if count < need}
    if small:
        raise InputError(f"too few training sequences per class: {small}; each class needs at least {need}.")
    splits = seed_splits(train, val if len(val) else None, test, pool.classes, list(seeds), seed)
    validation = (f"the dataset's val split ({len(val)} sequences)" if len(val)
                  else f"{VALIDATION_RULE}, held out once (seed {seed}) for every run")
    return {"mode": "seeds", "seeds": list(seeds), "seed": seed,
            "description": f"the dataset's own split ({len(train)} train, {len(test)} test sequences), trained "
                           f"with seeds {', '.join(map(str, seeds))}",
            "validation": validation, "pooled": np.concatenate([train, val, test]), "set_aside": {},
            "splits": splits}


def folds_manifest(pool: LabelledPool, plan: dict[str, Any]) -> dict[str, Any]:
    """``folds.json``: the plan's settings and, per run, the ids of its train, val and test sequences."""
    return {"dataset": pool.name, "source": pool.source, "ids": "<split>:<0-based position in that split as read>",
            "class_names": pool.class_names, **{k: v for k, v in plan.items() if k not in ("splits", "pooled")},
            "runs": [{"name": s.name, "seed": s.seed,
                      **{part: [pool.ids[i] for i in getattr(s, part)] for part in ("train", "val", "test")}}
                     for s in plan["splits"]]}
