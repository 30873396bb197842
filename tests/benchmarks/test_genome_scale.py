"""benchmarks/genome_scale.py's synthetic genome: record sizes, N gaps, soft-masking, and a FASTA
that predict's reader parses back base for base."""

from __future__ import annotations

import numpy as np

from benchmarks.genome_scale import record_sizes, write_genome
from bigbird_dna.genome.fasta_stream import iter_fasta


def test_one_record_is_a_quarter_and_the_sizes_add_up_with_small_contigs():
    sizes = record_sizes(10_000_000, 25, 40, np.random.default_rng(0))
    assert len(sizes) == 25 + 40 and sum(sizes) == 10_000_000
    assert sizes[0] == 2_500_000 and max(sizes) == sizes[0]
    assert all(1_000 <= size < 50_000 for size in sizes[25:])


def test_the_genome_has_its_n_gaps_and_soft_masking_and_parses_back(tmp_path):
    sizes = [4_000_037, 1_000_000, 61, 60]  # lines of 60: a short last line, one exact line
    info = write_genome(tmp_path / "g.fa.gz", sizes, seed=0)
    records = dict(iter_fasta(tmp_path / "g.fa.gz"))
    assert [len(seq) for seq in records.values()] == sizes and info["bases"] == sum(sizes)
    text = "".join(records.values())
    assert info["n"] == text.count("N") and 0.01 < info["n_fraction"] < 0.12  # 5% on average
    assert info["lowercase"] == sum(map(text.count, "acgt")) and 0.3 < info["softmasked_fraction"] < 0.45
    assert "N" * 10_000 in text  # N comes in long gaps
