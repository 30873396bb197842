"""Labelled sequences from files: a TSV/CSV table, or one FASTA file per class.

- **Table**: ``.tsv``/``.tsv.gz`` (tab) or ``.csv``/``.csv.gz`` (comma), a header row naming a
  sequence column and a label column (0/1). Other columns are ignored.
- **FASTA per class**: a mapping ``{label: path}``, e.g. ``{1: promoters.fa, 0: background.fa}``;
  plain or gzip.

Sequences may have any length, including shorter than one attention block; an empty sequence, a
character that is not an IUPAC nucleotide code, or a label other than 0/1 is an :class:`InputError`
naming the file and line or record.
"""

from __future__ import annotations

import csv
import os
from typing import Any

from bigbird_dna.data.labelled import LabelledSequences
from bigbird_dna.errors import InputError
from bigbird_dna.genome.fasta_stream import check_sequence, iter_fasta
from bigbird_dna.genome.text import open_text


def _label(value: Any, where: str) -> float:
    text = str(value).strip()
    if text not in ("0", "1", "0.0", "1.0"):
        raise InputError(f"{where}: label {value!r} is not 0 or 1. Binary labels are needed "
                         "(check data.label_column).")
    return float(text)


def read_table(path: str | os.PathLike, sequence_column: str = "sequence",
               label_column: str = "label") -> LabelledSequences:
    """Sequences and 0/1 labels of a TSV or CSV file with a header row."""
    name = str(path).removesuffix(".gz")
    delimiter = "," if name.endswith(".csv") else "\t"
    seqs, labels = [], []
    with open_text(path) as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        missing = {sequence_column, label_column} - set(reader.fieldnames or [])
        if missing:
            raise InputError(f"{path} has no column(s) {sorted(missing)}; its header is {reader.fieldnames}. "
                             "Set data.sequence_column and data.label_column.")
        for number, row in enumerate(reader, 2):
            where = f"{path} line {number}"
            seqs.append(check_sequence((row[sequence_column] or "").strip(), where))
            labels.append(_label(row[label_column], where))
    if not seqs:
        raise InputError(f"{path} has a header but no rows.")
    return LabelledSequences(seqs, labels)


def read_fasta_per_class(files: dict[Any, str | os.PathLike]) -> LabelledSequences:
    """Sequences of one FASTA file per class: ``{label: path}`` with labels 0 and 1."""
    seqs, labels = [], []
    for label, path in files.items():
        value = _label(label, f"data class key {label!r}")
        count = 0
        for _, seq in iter_fasta(path):
            seqs.append(seq)
            labels.append(value)
            count += 1
        if not count:
            raise InputError(f"{path} holds no FASTA records.")
    return LabelledSequences(seqs, labels)


def read_labelled(source: str | os.PathLike | dict, sequence_column: str = "sequence",
                  label_column: str = "label") -> LabelledSequences:
    """A table path, or a ``{label: FASTA path}`` mapping (one FASTA per class)."""
    if isinstance(source, dict):
        return read_fasta_per_class(source)
    return read_table(source, sequence_column, label_column)
