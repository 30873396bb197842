"""Chromatin-profile samples from your own intervals: a BED/TSV of bins with 0/1 label columns plus
a genome FASTA, read as windows of any context centred on each bin (the paper used 8 kbp).

The DeepSEA ``.mat`` files hold only the 1000-bp windows and no coordinates, so longer context has
to come from the genome; this is that path.

**File format.** BED-like, plain or gzip, read by :mod:`bigbird_dna.genome.bed` (tab-separated, or
whitespace without tabs; ``#``, ``track`` and ``browser`` lines are skipped). Columns:
``chrom``, ``start``, ``end`` (0-based, half-open, BED convention), optionally more columns (name,
...), then from ``label_column`` on exactly ``num_labels`` 0/1 values. A first line whose ``start``
is not an integer is a header; its label columns name the labels.

**Windows.** The window of bin ``[start, end)`` is ``[c - context_bp // 2, c - context_bp // 2 +
context_bp)`` with ``c = (start + end) // 2``: for a DeepSEA 200-bp bin and 1000 bp of context,
``[start - 400, start + 600)``, exactly DeepSEA's window. A window that runs past a contig end is
padded with ``N`` (``pad_ends=True``) or refused. Labels are stored bit-packed (919 labels: 115 bytes
per bin).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import bed_lines, is_header
from bigbird_dna.genome.intervals import centred_window, fetch_padded
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import reverse_complement


@dataclass
class LabelledIntervals:
    """Bins and their labels, as read from one intervals file.

    Attributes:
        records, starts, ends: the bins (0-based, half-open), ``[N]`` each.
        labels: ``[N, ceil(num_labels / 8)]`` uint8, bit-packed 0/1 labels (``np.packbits``, axis 1).
        num_labels: labels per bin.
        label_names: from the header, or ``None``.
    """

    records: list[str]
    starts: np.ndarray
    ends: np.ndarray
    labels: np.ndarray
    num_labels: int
    label_names: list[str] | None = None

    def __len__(self) -> int:
        return len(self.records)

    def bins(self) -> Iterator[tuple[str, int, int]]:
        """``(record, start, end)`` of every bin."""
        return zip(self.records, self.starts.tolist(), self.ends.tolist())

    def label_row(self, index: int) -> np.ndarray:
        """Labels of bin ``index`` as ``[num_labels]`` float32."""
        return np.unpackbits(self.labels[index], count=self.num_labels).astype(np.float32)

    def subset(self, keep: np.ndarray) -> "LabelledIntervals":
        """The bins where the boolean mask ``keep [N]`` is True."""
        return LabelledIntervals([r for r, k in zip(self.records, keep) if k], self.starts[keep], self.ends[keep],
                                 self.labels[keep], self.num_labels, self.label_names)


def read_labelled_intervals(path: str | os.PathLike, num_labels: int, label_column: int = 3) -> LabelledIntervals:
    """Read a BED/TSV of bins with ``num_labels`` 0/1 label columns starting at ``label_column``.

    Raises:
        InputError: a missing file, a line with bad coordinates, a label count that disagrees with
            ``num_labels``, a label that is not 0 or 1, or no bins at all. Messages name the line.
    """
    lines = bed_lines(path, "intervals file", "Set data.intervals to a BED/TSV of bins with label columns.")
    if label_column < 3:
        raise InputError(f"data.label_column={label_column}: labels must come after chrom, start and end "
                         "(column 3 or later, 0-based).")
    records, starts, ends, rows, names = [], [], [], [], None
    for line in lines:
        fields, where = line.fields, line.where
        if len(fields) - label_column != num_labels:
            raise InputError(f"{where} has {max(len(fields) - label_column, 0)} label columns (from column "
                             f"{label_column}), but task.num_labels={num_labels}: the label count disagrees "
                             "with the config. Set task.num_labels (and task.groups) to the file's label count, "
                             "or data.label_column to the first label column.")
        if not records and names is None and is_header(fields):
            names = fields[label_column:]
            continue
        _, start, end = line.region()
        try:
            values = np.asarray(fields[label_column:], dtype=np.float32)
        except ValueError:
            values = np.array([np.nan])
        if not np.isin(values, (0.0, 1.0)).all():
            raise InputError(f"{where}: labels must be 0 or 1; found {fields[label_column:][:5]}...")
        records.append(fields[0])
        starts.append(start)
        ends.append(end)
        rows.append(np.packbits(values.astype(np.uint8)))
    if not records:
        raise InputError(f"{path} holds no intervals. Give one bin per line: chrom, start, end, labels.")
    return LabelledIntervals(records, np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64),
                             np.stack(rows), num_labels, names)


class IntervalWindows(Dataset):
    """Windows centred on labelled bins as ``(seq, labels [num_labels] float32, index)`` items.

    Args:
        genome: the genome (each DataLoader worker opens its own handle).
        intervals: the bins, already checked with :func:`check_intervals`.
        context_bp: window length in bases.
        reverse_complement_prob: chance to reverse-complement a window (training augmentation).
        both_strands: evaluation mode: items ``N..2N-1`` are the reverse complements of ``0..N-1``
            (strand layout ``halves``), for averaging the two predictions.
    """

    def __init__(self, genome: GenomeReader, intervals: LabelledIntervals, context_bp: int,
                 reverse_complement_prob: float = 0.0, both_strands: bool = False):
        if context_bp < 1:
            raise InputError(f"data.context_bp={context_bp} must be positive.")
        self.genome = genome
        self.intervals = intervals
        self.context_bp = context_bp
        self.reverse_complement_prob = reverse_complement_prob
        self.both_strands = both_strands

    def __len__(self) -> int:
        return len(self.intervals) * (2 if self.both_strands else 1)

    def window(self, index: int) -> tuple[str, int, int]:
        """``(record, w_start, w_end)`` of bin ``index`` (forward strand)."""
        bins = self.intervals
        return (bins.records[index], *centred_window(int(bins.starts[index]), int(bins.ends[index]), self.context_bp))

    def __getitem__(self, index: int) -> tuple[str, np.ndarray, int]:
        n = len(self.intervals)
        bin_index = index % n
        seq = fetch_padded(self.genome, *self.window(bin_index))
        flip = index >= n or (self.reverse_complement_prob > 0 and
                              float(torch.rand(())) < self.reverse_complement_prob)  # per-worker torch seed
        return (reverse_complement(seq) if flip else seq), self.intervals.label_row(bin_index), index


def split_by_record(intervals: LabelledIntervals, val_records: Sequence[str], test_records: Sequence[str],
                    train_records: Sequence[str] | None = None) -> dict[str, LabelledIntervals]:
    """Chromosome holdout: bins on ``val_records``/``test_records`` form those splits; training gets
    ``train_records`` if given, else every other record.

    Raises:
        InputError: a record in two splits, or an empty train or val split.
    """
    val, test = set(val_records), set(test_records)
    if val & test:
        raise InputError(f"records {sorted(val & test)} are in both data.val_records and data.test_records.")
    records = np.asarray(intervals.records)
    in_val, in_test = np.isin(records, list(val)), np.isin(records, list(test))
    in_train = np.isin(records, list(train_records)) if train_records else ~(in_val | in_test)
    in_train &= ~(in_val | in_test)
    splits = {"train": intervals.subset(in_train), "val": intervals.subset(in_val),
              "test": intervals.subset(in_test)}
    for name in ("train", "val"):
        if not len(splits[name]):
            raise InputError(f"the {name} split holds no intervals (val_records={sorted(val)}, test_records="
                             f"{sorted(test)}; the file has {sorted(set(intervals.records))[:10]}). Fix "
                             "data.val_records / data.test_records / data.train_records.")
    return splits
