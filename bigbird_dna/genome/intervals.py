"""Windows of a fixed length centred on genome intervals, and their checks against the genome.

Coordinates are 0-based and half-open. The window of bin ``[start, end)`` with ``context_bp``
bases is ``[c - context_bp // 2, c - context_bp // 2 + context_bp)``, ``c = (start + end) // 2``:
for a DeepSEA 200-bp bin and 1000 bp of context, ``[start - 400, start + 600)``, exactly DeepSEA's
window. A window that runs past a contig end is padded with ``N`` (:func:`fetch_padded`) or refused.
Training on labelled bins (:mod:`bigbird_dna.data.chromatin.intervals`) and scoring a BED
(:mod:`bigbird_dna.inference.windows`) cut the same windows.
"""

from __future__ import annotations

from typing import Iterable

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.records import unknown_record


def centred_window(start: int, end: int, context_bp: int) -> tuple[int, int]:
    """``[w_start, w_end)`` of ``context_bp`` bases centred on the bin ``[start, end)`` (0-based,
    half-open); may reach below 0 or past the contig end."""
    w_start = (start + end) // 2 - context_bp // 2
    return w_start, w_start + context_bp


def check_intervals(bins: Iterable[tuple[str, int, int]], record_lengths: dict[str, int], context_bp: int,
                    pad_ends: bool, source: str) -> None:
    """Refuse bins ``(record, start, end)`` on contigs the genome lacks or past a contig end (and,
    without ``pad_ends``, windows that overhang an end), naming the first offender."""
    for i, (record, start, end) in enumerate(bins):
        length = record_lengths.get(record)
        if length is None:
            missing = unknown_record(record, record_lengths, "the genome FASTA", "contig")
            raise InputError(f"bin {i} of {source} ({record}:{start}-{end}): {missing} Use the genome the "
                             "intervals were called on (same contig names).")
        if end > length:
            raise InputError(f"bin {i} of {source}, {record}:{start}-{end}, runs past the end of {record} "
                             f"({length} bp; 0-based, half-open). Use the genome the intervals were called on.")
        w_start, w_end = centred_window(int(start), int(end), context_bp)
        if not pad_ends and (w_start < 0 or w_end > length):
            raise InputError(f"the {context_bp}-bp window {record}:{w_start}-{w_end} of bin {i} of {source} runs "
                             f"past an end of {record} ({length} bp). Set data.pad_ends=true to pad with N, or "
                             "drop bins near contig ends.")


def fetch_padded(genome: GenomeReader, record: str, start: int, end: int) -> str:
    """Bases ``[start, end)`` of ``record``, with ``N`` for positions before 0 or past the end."""
    length = genome.record_lengths[record]
    inside = genome.fetch(record, min(max(start, 0), length), max(min(end, length), 0))
    return "N" * max(0, -start) + inside + "N" * max(0, end - max(start, length))
