"""EPDnew BED -> TSS -> strand-aware windows, genome checks, splits and far-from-TSS negatives."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from bigbird_dna.data.promoter.epdnew import (
    FarFromTssSampler,
    Tss,
    Window,
    assign_to_splits,
    check_windows,
    promoter_window,
    read_epdnew_bed,
)
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.genome.splits import Region
from tests.promoter.conftest import lambda_seq, write_fasta


def _bed(path, *lines):
    path.write_text("track name=epdnew\n" + "".join("\t".join(map(str, line)) + "\n" for line in lines))
    return path


def test_epdnew_tss_is_start_plus_49_on_plus_and_end_minus_50_on_minus(tmp_path):
    bed = _bed(tmp_path / "p.bed", ("chrA", 1000, 1060, "GENE_1", 900, "+"), ("chrA", 2000, 2060, "GENE_2", 900, "-"))
    assert read_epdnew_bed(bed) == [Tss("chrA", 1049, "+", "GENE_1"), Tss("chrA", 2010, "-", "GENE_2")]


def test_gzip_epdnew_bed_with_whitespace_columns_reads_like_the_plain_file(tmp_path):
    plain = _bed(tmp_path / "p.bed", ("chrA", 1000, 1060, "GENE_1", 900, "+"))
    packed = tmp_path / "p.bed.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    spaced = tmp_path / "s.bed"
    spaced.write_text("# EPDnew\nchrA 1000  1060 GENE_1 900 +\n")
    assert read_epdnew_bed(packed) == read_epdnew_bed(spaced) == read_epdnew_bed(plain) == [
        Tss("chrA", 1049, "+", "GENE_1")]


@pytest.mark.parametrize("line, needle", [
    (("chrA", 1000, 1061, "G", 900, "+"), "61 bp"),
    (("chrA", 1000, 1060, "G", 900, "*"), "strand"),
    (("chrA", "x", 1060, "G", 900, "+"), "not integers"),
])
def test_malformed_bed_lines_are_refused_with_their_line_number(tmp_path, line, needle):
    with pytest.raises(InputError, match=needle) as err:
        read_epdnew_bed(_bed(tmp_path / "p.bed", line))
    assert "line 2" in str(err.value)


def test_plus_strand_window_reads_forward_and_puts_the_tss_at_index_upstream(tmp_path):
    seq = lambda_seq()[:5000]
    with open_genome(write_fasta(tmp_path / "g.fa", {"chrA": seq})) as genome:
        window = promoter_window(Tss("chrA", 2000, "+"), upstream_bp=300, downstream_bp=200)
        assert (window.start, window.end) == (1700, 2200)
        read = window.read(genome)
    assert read == seq[1700:2200] and read[300] == seq[2000]


def test_minus_strand_window_is_the_reverse_complement_with_the_tss_at_index_upstream(tmp_path):
    seq = lambda_seq()[:5000]
    with open_genome(write_fasta(tmp_path / "g.fa", {"chrA": seq})) as genome:
        window = promoter_window(Tss("chrA", 2000, "-"), upstream_bp=300, downstream_bp=200)
        # upstream of a minus-strand TSS lies to its right: TSS-300..TSS+199 read leftwards
        assert (window.start, window.end, window.strand) == (1801, 2301, "-")
        read = window.read(genome)
    assert read == reverse_complement(seq[1801:2301])
    assert read[300] == reverse_complement(seq[2000])
    assert read[:300] == reverse_complement(seq[2001:2301])  # the upstream part


def test_a_bed_contig_missing_from_the_fasta_is_a_clear_error():
    windows = [Window("chr1", 0, 100, "+", "GENE_1")]
    with pytest.raises(InputError, match="contig 'chr1'.*not in the genome FASTA.*NC_001416"):
        check_windows(windows, {"NC_001416": 48502}, "promoters.bed")


@pytest.mark.parametrize("window", [Window("chrA", 4900, 5100, "+", "G"), Window("chrA", -10, 190, "-", "G")])
def test_a_window_past_a_chromosome_end_is_a_clear_error_or_skipped_on_request(window):
    with pytest.raises(InputError, match="runs past the end of chrA.*skip_out_of_bounds"):
        check_windows([window], {"chrA": 5000}, "p.bed")
    inside = Window("chrA", 0, 200, "+", "ok")
    assert check_windows([window, inside], {"chrA": 5000}, "p.bed", skip_out_of_bounds=True) == [inside]


def test_windows_go_to_the_split_that_holds_them_and_straddlers_go_nowhere():
    splits = {"train": [Region("chr1", 0, 1000)], "val": [Region("chr1", 1000, 2000)], "test": [Region("chr2", 0, 500)]}
    windows = [Window("chr1", 100, 300, "+"), Window("chr1", 900, 1100, "-"), Window("chr1", 1500, 1700, "+"),
               Window("chr2", 0, 200, "-")]
    out = assign_to_splits(windows, splits)
    assert out == {"train": [windows[0]], "val": [windows[2]], "test": [windows[3]]}


def test_random_genomic_negatives_stay_far_from_every_tss(tmp_path):
    seq = lambda_seq()
    tss = [Tss("chrA", p, "+") for p in (5000, 20000, 35000)]
    with open_genome(write_fasta(tmp_path / "g.fa", {"chrA": seq})) as genome:
        sampler = FarFromTssSampler(tss, window_bp=500, min_distance_bp=2000, max_ambiguous_fraction=0.1)
        windows = sampler.sample(genome, [Region("chrA", 0, len(seq))], 50, np.random.default_rng(0))
    assert len(windows) == 50 and {w.strand for w in windows} == {"+", "-"}
    for w in windows:
        assert w.end - w.start == 500
        assert all(t.position < w.start - 2000 or t.position >= w.end + 2000 for t in tss)
