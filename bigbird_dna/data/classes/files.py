"""Sequences with a class name each, read from one of three layouts (general classification).

- **FASTA per class**: a mapping ``{class_name: path}``, e.g. ``{enhancer: e.fa, background: b.fa}``
  (plain or gzip); every record of a file is one sequence of that class.
- **Table**: ``.tsv``/``.tsv.gz`` (tab) or ``.csv``/``.csv.gz`` (comma) with a header row naming a
  sequence column and a label column whose values are the class names (strings or integers).
- **Class folders** (the Genomic Benchmarks layout): a folder holding one subfolder per class; each
  file in a subfolder is either a plain text file with one sequence (Genomic Benchmarks stores one
  ``.txt`` per sequence; line breaks are ignored) or a FASTA (first character ``>``), plain or gzip.
  Files are read in name order; hidden files (``.name``) are skipped.

A **dataset folder** holds its splits (:func:`dataset_splits`): ``ROOT/train/``, ``ROOT/test/`` and
``ROOT/val/`` (or ``valid/``) class folders (Genomic Benchmarks), or ``ROOT/train.csv``, ``test.csv``
tables (the Nucleotide Transformer benchmark: columns ``sequence``, ``label``, ``name``) or
``train.tsv``, ``val.tsv``, ``test.tsv`` (the annotation builder's output); plain or gzip.

Class names are kept as strings (a mapping key ``0`` and a table label ``0`` are the same class).
An empty sequence, a non-IUPAC character, an empty label or a class folder with no sequence is an
:class:`InputError` naming the file and line, record or folder.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bigbird_dna.errors import InputError
from bigbird_dna.genome.fasta_stream import check_sequence, iter_fasta
from bigbird_dna.genome.text import open_text


@dataclass
class ClassSequences:
    """Parallel lists: ``seqs[i]`` (a DNA string) belongs to class ``classes[i]`` (a name)."""

    seqs: list[str] = field(default_factory=list)
    classes: list[str] = field(default_factory=list)
    layout: str = ""

    def add(self, seq: str, name: str) -> None:
        self.seqs.append(seq)
        self.classes.append(name)

    def counts(self) -> dict[str, int]:
        """Sequences per class name, in order of first appearance."""
        found: dict[str, int] = {}
        for name in self.classes:
            found[name] = found.get(name, 0) + 1
        return found


def class_name(value: Any, where: str) -> str:
    """A class name as a string; ``1.0`` from a spreadsheet export stays ``"1.0"`` (not ``"1"``)."""
    text = str(value).strip() if value is not None else ""
    if not text:
        raise InputError(f"{where}: the class label is empty. Give every sequence a class (check data.label_column).")
    return text


def read_fasta_per_class(files: Mapping[Any, str | os.PathLike]) -> ClassSequences:
    """Every record of each FASTA, with the class of its key: ``{class_name: path}``."""
    found = ClassSequences(layout="fasta_per_class")
    for key, path in files.items():
        name = class_name(key, f"data class key {key!r}")
        for _, seq in iter_fasta(path):  # refuses a file with no record
            found.add(seq, name)
    return found


def read_table(path: str | os.PathLike, sequence_column: str = "sequence",
               label_column: str = "label") -> ClassSequences:
    """Sequences and class names of a TSV or CSV file with a header row."""
    name = str(path).removesuffix(".gz")
    delimiter = "," if name.endswith(".csv") else "\t"
    found = ClassSequences(layout="table")
    fix = "Give a TSV/CSV path, a {class: FASTA} mapping or a class-folder directory."
    with open_text(path, "table", fix) as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        missing = [c for c in (sequence_column, label_column) if c not in (reader.fieldnames or [])]
        if missing:
            raise InputError(f"{path} has no column(s) {missing}; its header is {reader.fieldnames}. "
                             "Set data.sequence_column and data.label_column.")
        for number, row in enumerate(reader, 2):
            where = f"{path} line {number}"
            found.add(check_sequence((row[sequence_column] or "").strip(), where), class_name(row[label_column], where))
    if not found.seqs:
        raise InputError(f"{path} has a header but no rows.")
    return found


def _read_sequence_file(path: Path) -> list[str]:
    """The sequences of one file: every record of a FASTA, or the whole text as one sequence."""
    with open_text(path) as handle:
        text = handle.read()
    if text.startswith(">"):
        return [seq for _, seq in iter_fasta(path)]
    return [check_sequence("".join(text.split()), str(path))]


def read_class_folders(root: str | os.PathLike) -> ClassSequences:
    """The sequences of ``root/<class>/*``: one class per subfolder (the Genomic Benchmarks layout)."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise InputError(f"class folder not found: {root}. It should hold one subfolder per class.")
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise InputError(f"{root} has no class subfolders; the layout is {root}/<class>/<one file per sequence>.")
    found = ClassSequences(layout="class_folders")
    for folder in folders:
        files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
        for path in files:
            for seq in _read_sequence_file(path):
                found.add(seq, folder.name)
        if not files:
            raise InputError(f"class folder {folder} holds no sequence files; remove it or add its sequences.")
    return found


TABLE_SUFFIXES = (".tsv", ".csv", ".tsv.gz", ".csv.gz")


def dataset_splits(root: str | os.PathLike) -> dict[str, Path | None]:
    """``{"train", "val", "test": path or None}`` of a dataset folder (see the module docstring);
    a split is a class folder or a table, train is required."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise InputError(f"dataset folder not found: {root}.")

    def find(*names: str) -> Path | None:
        for name in names:
            if (root / name).is_dir():
                return root / name
            tables = [root / f"{name}{suffix}" for suffix in TABLE_SUFFIXES if (root / f"{name}{suffix}").is_file()]
            if tables:
                return tables[0]
        return None

    train = find("train")
    if train is None:
        raise InputError(f"{root} has no train/ folder and no train.csv or train.tsv; the layouts read are "
                         f"{root}/train/<class>/* with {root}/test/<class>/* (Genomic Benchmarks), {root}/train.csv "
                         "with test.csv (Nucleotide Transformer benchmark), and train.tsv, val.tsv, test.tsv "
                         "(python -m bigbird_dna.data.annotation).")
    return {"train": train, "val": find("val", "valid"), "test": find("test")}


def read_classes(source: str | os.PathLike | Mapping, sequence_column: str = "sequence",
                 label_column: str = "label") -> ClassSequences:
    """A ``{class: FASTA}`` mapping, a class-folder directory, or a TSV/CSV path."""
    if isinstance(source, Mapping):
        return read_fasta_per_class(source)
    if Path(source).expanduser().is_dir():
        return read_class_folders(source)
    return read_table(source, sequence_column, label_column)
