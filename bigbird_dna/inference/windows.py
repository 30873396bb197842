"""The windows a scan scores: sliding over FASTA files (streamed, memory independent of record
length), or one centred on each interval of a BED file.

**Windows.** Coordinates are 0-based and half-open, always on the forward strand. In a record of
``L`` bases, windows of ``window`` bases start at ``0, stride, 2*stride, ...`` while they fit. If
they leave a tail uncovered, one more window is aligned to the record's end, ``[L - window, L)``, so
every base is scored with a full-length window. A record shorter than ``window`` is one window,
``[0, L)``, as long as the record. The ``-`` strand of a window is the reverse complement of the
same bases, and is yielded right after its ``+`` strand.

**Streaming.** Records arrive in chunks (:meth:`~bigbird_dna.genome.reader.GenomeReader.chunks`,
upper-case) and are never joined: windows are cut as soon as their bases are in, and only the bases a later
window still needs are carried over to the next chunk (at most ``window`` of them), so memory
holds about one chunk plus one window whatever the record's length. ``L`` is known only at the
record's last chunk, which is where the end-aligned window is cut. The input is read once: the
record names are checked (a name twice is refused: rows are keyed by name) as the scan reaches them.

**Intervals** (:func:`interval_windows`): one window centred on each BED interval, as training on
labelled bins cuts them (:mod:`bigbird_dna.genome.intervals`), padded with N past a contig end. An
interval with a strand (BED column 6) is scored on that strand only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.bed import Region, read_stranded_bed
from bigbird_dna.genome.intervals import centred_window, check_intervals, fetch_padded
from bigbird_dna.genome.reader import CHUNK_BP, RecordChunk
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.model.config import EncoderConfig


@dataclass(frozen=True)
class ScanWindow:
    """Bases ``[start, end)`` of ``record`` (0-based, half-open, forward strand), read on ``strand``.

    ``seq`` is in the window's own orientation; ``n_fraction`` is the fraction of N/IUPAC codes.
    """

    record: str
    start: int
    end: int
    strand: str
    seq: str
    n_fraction: float


def model_window(export) -> int:
    """The window in bp a model reads by default (``predict``, ``embed``, ``variants``): the export's
    ``predict_window_bp`` (a classifier: its training sequences' length), else the window it was
    pretrained on (``metadata.training.data.window_bp``), else what its context holds at one base per
    input token (:attr:`~bigbird_dna.model.config.EncoderConfig.max_input_tokens`, without ``[CLS]``
    and ``[SEP]``)."""
    trained = ((export.metadata.get("training") or {}).get("data") or {}).get("window_bp")
    window = (export.task_config.get("predict_window_bp") or trained
              or EncoderConfig.input_tokens_of(export.model_config) - 2)
    return int(window)


def window_starts(length: int, window: int, stride: int) -> list[int]:
    """Start positions of the windows over a record of ``length`` bases (see the module docstring)."""
    check_window(window, stride)
    if length <= window:
        return [0]
    starts = list(range(0, length - window + 1, stride))
    if starts[-1] + window < length:
        starts.append(length - window)
    return starts


def check_window(window: int, stride: int) -> None:
    """Refuse a window or stride below 1 (:class:`InputError`)."""
    if window < 1 or stride < 1:
        raise InputError(f"window ({window}) and stride ({stride}) must be positive.")


def chunk_windows(chunks: Iterable[RecordChunk], window: int, stride: int) -> Iterator[tuple[str, int, str]]:
    """``(record, start, forward bases)`` of every window of the records that ``chunks`` spell out,
    in order; the same windows as :func:`window_starts` on each whole record."""
    check_window(window, stride)
    carry, carry_start, next_start, last_start = "", 0, 0, -1  # carry = bases [carry_start, ...)
    for chunk in chunks:
        carry += chunk.seq
        end = carry_start + len(carry)
        while next_start + window <= end:
            yield chunk.record, next_start, carry[next_start - carry_start:next_start - carry_start + window]
            last_start, next_start = next_start, next_start + stride
        if not chunk.last:
            keep = max(carry_start, min(next_start, end - window))  # the end-aligned window needs `window`
            carry, carry_start = carry[keep - carry_start:], keep
            continue
        if last_start < 0:  # shorter than one window: the whole record
            yield chunk.record, 0, carry
        elif last_start + window < end:
            yield chunk.record, end - window, carry[len(carry) - window:]
        carry, carry_start, next_start, last_start = "", 0, 0, -1


def _distinct_names(path: str | os.PathLike, chunks: Iterable[RecordChunk],
                    seen: dict[str, str]) -> Iterator[RecordChunk]:
    """``chunks``, refusing a record name already in ``seen`` (name -> file), which it fills."""
    for chunk in chunks:
        if chunk.start == 0:
            if chunk.record in seen:
                other = seen[chunk.record]
                where = f"twice in {path}" if other == str(path) else f"in both {other} and {path}"
                raise InputError(f"record name {chunk.record!r} appears {where}; rows are keyed by record name, so "
                                 "rename one (or scan the files separately).")
            seen[chunk.record] = str(path)
        yield chunk


def iter_windows(fastas: Sequence[str | os.PathLike], window: int, stride: int,
                 strands: Sequence[str] = ("+", "-"), chunk_bp: int = CHUNK_BP) -> Iterator[ScanWindow]:
    """Every window of every record of the genome files ``fastas``, streamed, on the given strands.

    Each file is read once, in chunks of about ``chunk_bp`` bases. Raises :class:`InputError` for a
    bad file or record (at the chunk where the problem is) and for a record name seen before.
    """
    seen: dict[str, str] = {}
    for path in fastas:
        chunks = open_genome(path).chunks(chunk_bp)
        for record, start, forward in chunk_windows(_distinct_names(path, chunks, seen), window, stride):
            n_fraction = ambiguous_fraction(forward)
            end = start + len(forward)
            for strand in strands:
                oriented = reverse_complement(forward) if strand == "-" else forward
                yield ScanWindow(record, start, end, strand, oriented, n_fraction)


def interval_windows(bed: str | os.PathLike, fasta: str | os.PathLike, window: int, strands: tuple[str, ...]
                     ) -> tuple[list[Region], list[tuple[str, ...]], Iterator[ScanWindow]]:
    """The intervals of ``bed``, the strands scored for each (its own when the BED gives one, else
    ``strands``) and, lazily, their centred windows on those strands, in BED order.

    Raises:
        InputError: an interval on a contig the genome lacks or past a contig end.
    """
    bins, own = read_stranded_bed(bed)
    plan = [(strand,) if strand else strands for strand in own]
    genome = open_genome(fasta)
    try:
        check_intervals(bins, genome.record_lengths, window, pad_ends=True, source=str(bed))
    except InputError:
        genome.close()
        raise

    def windows() -> Iterator[ScanWindow]:
        with genome:
            for (record, start, end), interval_strands in zip(bins, plan):
                w_start, w_end = centred_window(start, end, window)
                forward = fetch_padded(genome, record, w_start, w_end)
                n_fraction = ambiguous_fraction(forward)
                for strand in interval_strands:
                    seq = reverse_complement(forward) if strand == "-" else forward
                    yield ScanWindow(record, w_start, w_end, strand, seq, n_fraction)

    return bins, plan, windows()
