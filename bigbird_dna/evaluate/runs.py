"""One training run per split: the split's sequences written as tables, the config composed as
``python -m bigbird_dna.train`` composes it, :func:`bigbird_dna.train.run`, and the test metrics of
the model and of both baselines read from the run's summary.

The task follows the label kind: two classes train ``task=promoter data=promoter_labelled`` (one
sigmoid output; the second class is the positive one, label 1), three or more
``task=classify data=classify`` (a softmax). The run trains the package's k-mer logistic regression
and small CNN on the same train and validation tables and scores them on the same test table
(:mod:`bigbird_dna.evaluation.reference`), on every row (``data.baselines.max_train=null``). The
user's overrides come last, so they win.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from bigbird_dna.errors import InputError
from bigbird_dna.evaluate.inputs import LabelledPool
from bigbird_dna.evaluation.folds import Split
from bigbird_dna.evaluation.summary import BASELINES
from bigbird_dna.runtime.atomic import write_text_atomic
from bigbird_dna.train import run
from bigbird_dna.training.compose import compose_train_config

TASKS = {"binary": ["task=promoter", "data=promoter_labelled"], "multiclass": ["task=classify", "data=classify"]}
MODELS = (("model", "BigBird (this package)"), *((key, name.split(" (")[0]) for key, name in BASELINES))
# Per label kind: (metric, how it is printed, the model's summary key, the baselines' summary key).
METRICS = {
    "binary": (("auroc", "AUROC", "auroc", "auroc"), ("auprc", "AUPRC", "auprc", "auprc"),
               ("accuracy", "accuracy", "accuracy", "accuracy"), ("f1", "F1", "f1", "f1"),
               ("mcc", "MCC", "mcc", "mcc")),
    "multiclass": (("macro_auroc", "macro AUROC", "macro_auroc", "auroc"),
                   ("accuracy", "accuracy", "accuracy", "accuracy"), ("macro_f1", "macro F1", "macro_f1", "macro_f1"),
                   ("mcc", "MCC", "mcc", "mcc")),
}


def write_split_tables(pool: LabelledPool, split: Split, folder: Path) -> dict[str, Path]:
    """``train.tsv``, ``val.tsv``, ``test.tsv`` (``sequence label id``) of ``split`` in ``folder``;
    labels are 0/1 for two classes, class names otherwise."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for part in ("train", "val", "test"):
        rows = []
        for i in getattr(split, part):
            label = pool.classes[i] if pool.label_kind == "binary" else pool.class_names[pool.classes[i]]
            rows.append(f"{pool.seqs[i]}\t{label}\t{pool.ids[i]}\n")
        paths[part] = write_text_atomic(folder / f"{part}.tsv", "sequence\tlabel\tid\n" + "".join(rows))
    return paths


def split_overrides(kind: str, tables: dict[str, Path], seed: int) -> list[str]:
    """The overrides that train on ``tables`` with ``seed``, testing and scoring both baselines."""
    data = [f"data.{part}='{path}'" for part, path in tables.items()]
    return [*TASKS[kind], *data, f"seed={seed}", "test=true", "data.baselines.enabled=true",
            "data.baselines.max_train=null"]


def compose_split_config(kind: str, tables: dict[str, Path], seed: int, run_dir: Path,
                         user_overrides: list[str]) -> DictConfig:
    """The run's config (:func:`split_overrides` then the user's); refused when the user's overrides
    swap the task or data group the split tables need (``task=classify`` on two classes, say). An
    ``experiment=`` keeps ours: a group given on the command line wins over an experiment's."""
    cfg = compose_train_config([*split_overrides(kind, tables, seed), *user_overrides], run_dir, user_overrides)
    plain = compose_train_config(TASKS[kind], run_dir)
    if (cfg.task._target_, cfg.data._target_) != (plain.task._target_, plain.data._target_):
        raise InputError(f"the overrides {' '.join(user_overrides)} swap the task or data group; evaluate trains "
                         f"{' '.join(TASKS[kind])} on each split's tables ({len(TASKS)} label kinds: "
                         f"{', '.join(f'{k}: {v[0]}' for k, v in TASKS.items())}). Leave task= and data= out.")
    return cfg


def _value(summary: dict[str, Any], key: str) -> float:
    value = summary.get(key)
    return float(value) if value is not None else math.nan


def split_metrics(summary: dict[str, Any], kind: str) -> dict[str, dict[str, float]]:
    """``{model: {metric: value}}`` of a run's summary: the model's ``test/<key>`` and each baseline's
    ``baseline/<name>/test_<key>`` (NaN when missing, e.g. baselines skipped)."""
    found = {"model": {metric: _value(summary, f"test/{key}") for metric, _, key, _ in METRICS[kind]}}
    for name, _ in MODELS[1:]:
        found[name] = {metric: _value(summary, f"baseline/{name}/test_{key}") for metric, _, _, key in METRICS[kind]}
    return found


def run_split(pool: LabelledPool, split: Split, folder: Path, user_overrides: list[str]) -> dict[str, Any]:
    """Train and score one split in ``folder`` (``data/`` tables, ``run/`` the training run).

    Returns:
        ``{"name", "seed", "sizes", "run_dir", "metrics": {model: {metric: value}}, "seconds",
        "phases", "baselines_skipped"}``.
    """
    tables = write_split_tables(pool, split, folder / "data")
    cfg = compose_split_config(pool.label_kind, tables, split.seed, folder / "run", user_overrides)
    summary = run(cfg)
    return {"name": split.name, "seed": split.seed,
            "sizes": {part: len(getattr(split, part)) for part in ("train", "val", "test")},
            "run_dir": str(folder / "run"), "metrics": split_metrics(summary, pool.label_kind),
            "seconds": summary.get("seconds"), "phases": summary.get("phases", {}),
            "baselines_skipped": summary.get("baseline/skipped")}
