"""The labelled sequences an evaluation reads, pooled with the split each came from.

``DATA`` is one of (every layout of :mod:`bigbird_dna.data.classes.files`):

- a **dataset folder** (:func:`~bigbird_dna.data.classes.files.dataset_splits`): Genomic Benchmarks
  (``ROOT/train/<class>/*``, ``ROOT/test/<class>/*``), the Nucleotide Transformer benchmark's
  ``train.csv``/``test.csv`` (columns ``sequence,label[,name]``), or the annotation builder's
  ``train.tsv``/``val.tsv``/``test.tsv``;
- one **table** (TSV/CSV with a header: sequence and label columns), all of it ``train``;
- **one FASTA per class**, written as ``data=classify`` takes it: ``"{enhancer: e.fa, other: b.fa}"``.

Each sequence's id is ``<split>:<i>``: its 0-based position among the sequences of that split as
read (a table's rows in order; a class folder's files in name order, classes in name order; a
FASTA's records in order). Classes are indexed in the order of
:func:`~bigbird_dna.data.classes.datamodule.sorted_class_names`; with two classes the second is the
positive one (the one AUPRC and F1 score).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from bigbird_dna.data.classes.datamodule import sorted_class_names
from bigbird_dna.data.classes.files import ClassSequences, dataset_splits, read_classes
from bigbird_dna.errors import InputError

SPLITS = ("train", "val", "test")
EXPECTED = ("a Genomic Benchmarks folder (ROOT/train/<class>/*, ROOT/test/<class>/*), a folder with train.csv and "
            "test.csv (Nucleotide Transformer benchmark) or train.tsv, val.tsv, test.tsv (the annotation builder), "
            "a TSV/CSV with sequence and label columns, or one FASTA per class as \"{class_a: a.fa, class_b: b.fa}\"")


@dataclass
class LabelledPool:
    """Every sequence of a dataset, its class and the split it came from.

    Attributes:
        name: the dataset's name (its folder or file name), which picks published results.
        data: ``DATA`` as given.
        layout: ``dataset_folder``, ``table`` or ``fasta_per_class``.
        source: ``{split: path}`` of what was read.
        seqs: ``N`` DNA strings.
        classes: ``int64 [N]`` class indices into ``class_names``.
        class_names: the classes in index order.
        ids: ``N`` ids, ``<split>:<i>``.
        splits: ``N`` split names (``train``, ``val``, ``test``).
    """

    name: str
    data: str
    layout: str
    source: dict[str, str]
    seqs: list[str]
    classes: np.ndarray
    class_names: list[str]
    ids: list[str]
    splits: list[str]

    @property
    def label_kind(self) -> str:
        """``binary`` (two classes) or ``multiclass``."""
        return "binary" if len(self.class_names) == 2 else "multiclass"

    def indices(self, *splits: str) -> np.ndarray:
        """``int64`` positions of the sequences from ``splits``, in pool order."""
        return np.flatnonzero(np.isin(np.asarray(self.splits), splits))

    def counts(self, indices: np.ndarray | None = None) -> dict[str, int]:
        """Sequences per class name (of ``indices``; default all)."""
        chosen = self.classes if indices is None else self.classes[indices]
        return {name: int((chosen == j).sum()) for j, name in enumerate(self.class_names)}


def _fasta_mapping(text: str) -> dict[str, str] | None:
    """``{class: path}`` of a ``"{a: a.fa, b: b.fa}"`` argument; None for anything else."""
    if not text.strip().startswith("{"):
        return None
    try:
        mapping = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise InputError(f"{text!r} is not a mapping {{class: FASTA, ...}}: {err}".splitlines()[0]) from None
    if not isinstance(mapping, dict) or len(mapping) < 2:
        raise InputError(f"{text!r}: give two or more classes, {{class_a: a.fa, class_b: b.fa}}.")
    return {str(k): str(v) for k, v in mapping.items()}


def read_dataset(data: str, name: str | None = None, sequence_column: str = "sequence",
                 label_column: str = "label") -> LabelledPool:
    """Read ``data`` (see the module docstring) into one pool.

    Raises:
        InputError: nothing at ``data``, a layout not read here (naming the ones that are), a bad
            file, or fewer than two classes.
    """
    mapping = _fasta_mapping(data)
    if mapping is not None:
        sources: dict[str, object] = {"train": mapping}
        layout, default_name = "fasta_per_class", "fasta_per_class"
    else:
        path = Path(data).expanduser()
        if not path.exists():
            raise InputError(f"{path} not found; give {EXPECTED}.")
        if path.is_dir():
            sources = {split: found for split, found in dataset_splits(path).items() if found is not None}
            layout = "dataset_folder"
        elif path.name.removesuffix(".gz").endswith((".tsv", ".csv")):
            sources, layout = {"train": path}, "table"
        else:
            raise InputError(f"{path} is not a layout evaluate reads; give {EXPECTED}.")
        default_name = path.name.removesuffix(".gz").removesuffix(".tsv").removesuffix(".csv")
    read: dict[str, ClassSequences] = {split: read_classes(source, sequence_column, label_column)
                                       for split, source in sources.items()}
    class_names = sorted_class_names(read["train"].classes)
    if len(class_names) < 2:
        raise InputError(f"the training data {sources['train']} has one class ({class_names}); an evaluation needs "
                         "two or more. Check --label-column.")
    index = {c: j for j, c in enumerate(class_names)}
    seqs, classes, ids, splits = [], [], [], []
    for split, found in read.items():
        unknown = sorted(set(found.classes) - set(index))
        if unknown:
            raise InputError(f"the {split} data {sources[split]} has class(es) {unknown[:5]} that the training data "
                             f"does not have (train classes: {class_names}).")
        seqs += found.seqs
        classes += [index[c] for c in found.classes]
        ids += [f"{split}:{i}" for i in range(len(found.seqs))]
        splits += [split] * len(found.seqs)
    return LabelledPool(name or default_name, data, layout, {s: str(v) for s, v in sources.items()}, seqs,
                        np.asarray(classes, dtype=np.int64), class_names, ids, splits)
