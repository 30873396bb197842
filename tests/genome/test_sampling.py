"""Sampling a genome for tokenizers and baselines: reproducible chunks inside the regions, clear
errors for regions that do not fit, and the leading bases of a stream of sequences."""

from __future__ import annotations

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sampling import first_bases, sample_training_chunks

RECORD = "gi|9626243|ref|NC_001416.1|"  # the first word of the lambda FASTA's header


def test_chunks_are_reproducible_sized_and_inside_the_regions(lambda_fasta, lambda_seq):
    genome = open_genome(lambda_fasta)
    regions = [(RECORD, 0, 20_000), (RECORD, 30_000, 36_000)]
    first = list(sample_training_chunks(genome, regions, total_bp=50_000, seed=3))
    assert first == list(sample_training_chunks(genome, regions, total_bp=50_000, seed=3))
    assert first != list(sample_training_chunks(genome, regions, total_bp=50_000, seed=4))
    assert sum(map(len, first)) == 50_000
    assert all(1000 <= len(c) <= 10_000 for c in first[:-1])
    allowed = [lambda_seq.upper()[s:e] for _, s, e in regions]
    assert all(any(c in region for region in allowed) for c in first)


def test_soft_masked_chunks_come_back_upper_case(write_fasta, lambda_seq):
    genome = open_genome(write_fasta("masked.fa", {"chrA": lambda_seq[:5000].lower()}))
    chunks = list(sample_training_chunks(genome, None, total_bp=20_000, seed=0))
    assert all(chunk == chunk.upper() and chunk in lambda_seq.upper() for chunk in chunks)


def test_bad_regions_are_input_errors(lambda_fasta):
    genome = open_genome(lambda_fasta)
    with pytest.raises(InputError, match="not inside"):
        next(sample_training_chunks(genome, [("chrZ", 0, 5000)], total_bp=1000))
    with pytest.raises(InputError, match="not inside"):
        next(sample_training_chunks(genome, [(RECORD, 0, 10**9)], total_bp=1000))
    with pytest.raises(InputError, match="at least 1000 bp"):
        next(sample_training_chunks(genome, [(RECORD, 0, 500)], total_bp=1000))


def test_first_bases_cuts_the_stream_at_the_total():
    assert list(first_bases(iter(["ACGT", "GG", "TTTT", "CC"]), 7)) == ["ACGT", "GG", "T"]
    assert list(first_bases(iter(["ACGT"]), 0)) == []
