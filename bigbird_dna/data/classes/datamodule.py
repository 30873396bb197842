"""General sequence classification data, 2..N classes (``data=classify``, ``task=classify``).

Each of ``train``, ``val`` and ``test`` is one of the layouts of :mod:`bigbird_dna.data.classes.files`:
a ``{class_name: FASTA}`` mapping, a TSV/CSV with sequence and class-name columns, or a folder of
class subfolders. ``dir: ROOT`` reads a dataset folder (:func:`~bigbird_dna.data.classes.files.dataset_splits`): the
Genomic Benchmarks layout, ``ROOT/train/<class>/*``, ``ROOT/test/<class>/*`` when there is one (and
``ROOT/val/<class>/*`` if present), or tables ``ROOT/train.csv``, ``test.csv`` (or ``.tsv``).

**Classes.** The class names of train, sorted (numerically when every name is an integer, else as
strings), fix the output index order; the task receives them (:meth:`task_inputs`) and saves them
in its checkpoints and export. Labels are one-hot float32 ``[N, C]`` rows of
:class:`~bigbird_dna.data.labelled.LabelledSequences`; ``label_kind`` is ``"multiclass"``.

**Validation.** ``val`` if given, else a seeded, stratified ``val_fraction`` of each class of train
(:func:`~bigbird_dna.data.promoter.datamodule.stratified_holdout`). Every class needs at least one
validation sequence (its AUROC is undefined otherwise). A val or test class that train lacks is
refused. The realised split, with counts per split and class, is written to ``split_manifest.json``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from torch.utils.data import Dataset, Subset

from bigbird_dna.data.classes.files import ClassSequences, dataset_splits, read_classes
from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequences
from bigbird_dna.data.promoter.datamodule import stratified_holdout
from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import write_text_atomic

log = logging.getLogger(__name__)
_INTEGER = re.compile(r"[+-]?\d+")


def sorted_class_names(names: Iterable[str]) -> list[str]:
    """Distinct class names in index order: numeric when all are integers (``2`` before ``10``), else
    lexicographic."""
    distinct = set(names)
    if all(_INTEGER.fullmatch(n) for n in distinct):
        return sorted(distinct, key=int)
    return sorted(distinct)


def one_hot(found: ClassSequences, class_names: list[str], what: str) -> LabelledSequences:
    """``found`` as one-hot float32 ``[N, C]`` labels in the order of ``class_names``.

    Raises:
        InputError: ``found`` has a class that ``class_names`` (train's) does not.
    """
    unknown = sorted(set(found.classes) - set(class_names))
    if unknown:
        raise InputError(f"{what} has class(es) {unknown[:5]} that the training data does not have (train classes: "
                         f"{class_names}); fix the labels or add those classes to data.train.")
    index = {name: j for j, name in enumerate(class_names)}
    labels = np.zeros((len(found.seqs), len(class_names)), dtype=np.float32)
    labels[np.arange(len(found.seqs)), [index[name] for name in found.classes]] = 1.0
    return LabelledSequences(found.seqs, labels)


def class_counts(dataset: Dataset, class_names: list[str]) -> dict[str, int]:
    """Sequences per class of a :class:`LabelledSequences` or a :class:`Subset` of one."""
    if isinstance(dataset, Subset):
        labels = dataset.dataset.labels[dataset.indices]
    else:
        labels = getattr(dataset, "labels", np.zeros((0, len(class_names))))
    totals = labels.sum(axis=0) if len(labels) else np.zeros(len(class_names))
    return {name: int(total) for name, total in zip(class_names, totals)}


def _sources(data: dict[str, Any]) -> dict[str, Any]:
    """``{split: source or None}`` from ``data.train/val/test`` or the folders of ``data.dir``."""
    root = data.get("dir")
    if not root:
        if not data.get("train"):
            raise InputError("data.train is not set: give {class_a: a.fa, class_b: b.fa}, a TSV/CSV with sequence and "
                             "label columns, or data.dir=ROOT (Genomic Benchmarks: ROOT/train/<class>/*).")
        return {split: data.get(split) or None for split in ("train", "val", "test")}
    if data.get("train"):
        raise InputError(f"data.dir={root} and data.train are both set; give one (data.dir reads ROOT/train).")
    folder = dataset_splits(root)
    return {"train": folder["train"], **{split: data.get(split) or folder[split] for split in ("val", "test")}}


def _describe(source: Any) -> Any:
    """A source as it goes into the manifest: paths as strings, mappings as ``{class: path}``."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        return {str(k): str(v) for k, v in source.items()}
    return str(source)


class SequenceClassData(LabelledDataModule):
    """Sequences of 2..N named classes from FASTA-per-class mappings, tables or class folders.

    Args:
        seed: run seed (val hold-out, batch order).
        run_dir: where ``split_manifest.json`` goes.
        is_main_process: only the main process writes files.
        **data: the settings of ``conf/data/classify.yaml`` (``dir``, ``train``, ``val``, ``test``,
            ``val_fraction``, ``sequence_column``, ``label_column``, ``batch_size``, ``num_workers``,
            ``baselines``).
    """

    def __init__(self, seed: int, run_dir: str | Path, is_main_process: bool = True, **data: Any):
        sources = _sources(data)
        columns = (data.get("sequence_column", "sequence"), data.get("label_column", "label"))
        found = read_classes(sources["train"], *columns)
        self.class_names = sorted_class_names(found.classes)
        if len(self.class_names) < 2:
            raise InputError(f"the training data {_describe(sources['train'])} has {len(self.class_names)} class "
                             f"({self.class_names}); a classifier needs at least 2. Check data.label_column.")
        train: Dataset = one_hot(found, self.class_names, f"the training data {_describe(sources['train'])}")
        fraction = data.get("val_fraction")
        if sources["val"] is not None:
            what = f"the validation set {_describe(sources['val'])}"
            val: Dataset = one_hot(read_classes(sources["val"], *columns), self.class_names, what)
        else:
            if fraction is None or not 0.0 < fraction < 1.0:
                raise InputError(f"data.val_fraction={fraction} must lie in (0, 1) when data.val is not given.")
            kept, held_out = stratified_holdout(train.labels.argmax(1), fraction, seed)
            train, val = Subset(train, kept), Subset(train, held_out)
            what = (f"the validation set held out of the training data (data.val_fraction={fraction}, stratified; "
                    "a class needs at least two training sequences to have one held out)")
        test: Dataset | list = []
        if sources["test"] is not None:
            test = one_hot(read_classes(sources["test"], *columns), self.class_names,
                           f"the test set {_describe(sources['test'])}")
        self._check_every_class(val, what)
        super().__init__({"train": train, "val": val, "test": test}, data["batch_size"], data["num_workers"], seed,
                         baselines=data.get("baselines"),
                         reverse_complement_prob=data.get("reverse_complement_prob", 0.0),
                         eval_reverse_complement=data.get("eval_reverse_complement", False))
        self.label_kind = "multiclass"  # one-hot [N, C] labels (what the reference baselines score)
        self.layout = found.layout
        self.counts = {split: class_counts(ds, self.class_names) for split, ds in self.datasets.items() if len(ds)}
        log.info("sequences per split and class: %s", self.counts)
        if is_main_process:
            write_text_atomic(Path(run_dir) / "split_manifest.json", json.dumps({
                "source": "classify", "layout": self.layout, "dir": _describe(data.get("dir")),
                **{split: _describe(source) for split, source in sources.items()},
                "val_fraction": None if sources["val"] is not None else fraction, "seed": seed,
                "class_names": self.class_names, "samples": self.counts}, indent=2))

    def _check_every_class(self, val: Dataset, what: str) -> None:
        missing = [name for name, count in class_counts(val, self.class_names).items() if count == 0]
        if missing:
            raise InputError(f"{what} has no sequence of class(es) {missing[:5]}; every class needs one for its "
                             "AUROC (and the macro AUROC that picks the best checkpoint). Give a data.val with every "
                             "class, or more training sequences of those classes.")

    def task_inputs(self) -> dict[str, Any]:
        """The class names, in output order (saved in checkpoints and the export), and the train
        sequences per class (for ``task.class_weights: balanced``)."""
        counts = class_counts(self.datasets["train"], self.class_names)
        return {"class_names": list(self.class_names), "class_counts": [counts[n] for n in self.class_names]}

    def training_sequences(self) -> Iterable[str]:
        """The training sequences, for training a tokenizer from scratch."""
        return (self.datasets["train"][i][0] for i in range(len(self.datasets["train"])))
