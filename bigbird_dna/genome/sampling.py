"""Samples of sequence to train a tokenizer or fit a baseline on: random chunks of a genome
(:func:`sample_training_chunks`), or the leading bases of any sequences (:func:`first_bases`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction

_MAX_REJECTED_DRAWS = 1000


def sample_training_chunks(genome: GenomeReader, regions: Sequence[tuple[str, int, int]] | None,
                           total_bp: int, min_chunk_bp: int = 1000, max_chunk_bp: int = 10000,
                           seed: int = 0, max_ambiguous_fraction: float = 0.5) -> Iterator[str]:
    """Random chunks of a genome, upper-case, reproducible from ``seed``.

    Chunk lengths are uniform in ``[min_chunk_bp, max_chunk_bp]``; regions are drawn in proportion
    to their length, so every base is equally likely to be sampled. Draws are with replacement: a
    ``total_bp`` larger than the regions samples bases more than once.

    Args:
        genome: the genome to read.
        regions: ``(record, start, end)`` intervals, 0-based and half-open, to sample from, e.g.
            the TRAIN split only; ``None`` samples whole records. Regions shorter than
            ``min_chunk_bp`` are skipped.
        total_bp: bases to yield in all; the last chunk is cut to make the total exact.
        max_ambiguous_fraction: chunks with a larger fraction of non-ACGT bases are redrawn.

    Yields:
        Chunk sequences (str).

    Raises:
        InputError: bad sizes, unknown records, intervals outside a record, no region long enough,
            or 1000 draws in a row too ambiguous.
    """
    if total_bp <= 0 or not 1 <= min_chunk_bp <= max_chunk_bp:
        raise InputError(f"need total_bp > 0 and 1 <= min_chunk_bp <= max_chunk_bp, got total_bp={total_bp}, "
                         f"min_chunk_bp={min_chunk_bp}, max_chunk_bp={max_chunk_bp}.")
    rng = np.random.default_rng(seed)
    lengths = genome.record_lengths
    if regions is None:
        regions = [(name, 0, length) for name, length in lengths.items()]
    for record, start, end in regions:
        length = lengths.get(record)
        if length is None or not 0 <= start <= end <= length:
            raise InputError(f"region {record}:{start}-{end} is not inside {genome.path} "
                             f"(record length {length}; 0-based, half-open coordinates).")
    usable = [(r, s, e) for r, s, e in regions if e - s >= min_chunk_bp]
    if not usable:
        raise InputError(f"no region of {genome.path} is at least {min_chunk_bp} bp long; lower min_chunk_bp "
                         "or pass longer regions.")
    sizes = np.array([e - s for _, s, e in usable], dtype=np.float64)
    weights = sizes / sizes.sum()
    remaining, rejected = total_bp, 0
    while remaining > 0:
        record, start, end = usable[rng.choice(len(usable), p=weights)]
        size = min(int(rng.integers(min_chunk_bp, max_chunk_bp + 1)), end - start)
        offset = start + int(rng.integers(0, end - start - size + 1))
        chunk = genome.fetch(record, offset, offset + size)
        if ambiguous_fraction(chunk) > max_ambiguous_fraction:
            rejected += 1
            if rejected >= _MAX_REJECTED_DRAWS:
                raise InputError(f"{rejected} chunks in a row of {genome.path} were more than "
                                 f"{max_ambiguous_fraction:.0%} N/ambiguous; pass regions with real "
                                 "sequence or raise max_ambiguous_fraction.")
            continue
        rejected = 0
        chunk = chunk[:remaining]
        remaining -= len(chunk)
        yield chunk


def first_bases(seqs: Iterable[str], total_bp: int) -> Iterator[str]:
    """The leading sequences of ``seqs`` up to ``total_bp`` bases in all (the last one cut)."""
    for seq in seqs:
        if total_bp <= 0:
            return
        yield seq[:total_bp]
        total_bp -= len(seq)
