"""Reading VCF/TSV variants and building ref/alt windows: no model needed."""

from __future__ import annotations

import gzip

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.variants.vcf import ReadCounts, Variant, read_variants
from bigbird_dna.variants.windows import fits, variant_windows
from tests.promoter.conftest import lambda_seq, write_fasta

VCF = ("##fileformat=VCFv4.2\n#CHROM\tPOS\tID\tREF\tALT\tQUAL\tFILTER\tINFO\n"
       "chrA\t10\t.\tA\tC,T\t.\t.\t.\n"
       "chrA\t20\trs1\tG\t<DEL>\t.\t.\t.\n"
       "chrA\t30\t.\tC\t*,G\t.\t.\t.\n"
       "chrA\t40\t.\tT\t.\t.\t.\t.\n")


def test_multi_allelic_split_and_symbolic_skipped_same_for_gzip(tmp_path):
    (tmp_path / "v.vcf").write_text(VCF)
    with gzip.open(tmp_path / "v.vcf.gz", "wt") as handle:
        handle.write(VCF)
    results = []
    for name in ("v.vcf", "v.vcf.gz"):
        counts = ReadCounts()
        results.append((list(read_variants(tmp_path / name, "vcf", counts)), counts.skipped))
    assert results[0] == results[1]
    variants, skipped = results[0]
    assert [(v.pos, v.ref, v.alt, v.line) for v in variants] == [(10, "A", "C", 3), (10, "A", "T", 3),
                                                                 (30, "C", "G", 5)]
    assert [v.id for v in variants] == [".", ".", "."]
    assert skipped == {"<symbolic>": 1, "*": 1, ".": 1}


def test_tsv_with_header_and_bad_position(tmp_path):
    (tmp_path / "v.tsv").write_text("chrom\tpos\tref\talt\nchrA\t5\ta\tg\n")
    assert list(read_variants(tmp_path / "v.tsv", "tsv", ReadCounts())) == [Variant("chrA", 5, "a", "g", 2)]  # as given
    (tmp_path / "bad.tsv").write_text("chrA\t0\tA\tG\n")
    with pytest.raises(InputError, match="line 1"):
        list(read_variants(tmp_path / "bad.tsv", "tsv", ReadCounts()))


@pytest.fixture(scope="module")
def genome(tmp_path_factory):
    seq = lambda_seq()[:1000]
    return seq, open_genome(write_fasta(tmp_path_factory.mktemp("g") / "g.fa", {"chrA": seq}))


@pytest.mark.parametrize("pos,ref_len,alt", [(500, 1, "X"), (500, 4, "A"), (500, 1, "ACGTACG"), (3, 1, "T"),
                                             (998, 1, "GG"), (995, 5, "C")])
def test_windows_keep_length_and_equal_the_edited_genome(genome, pos, ref_len, alt):
    seq, fasta = genome
    alt = alt.replace("X", "T" if seq[pos - 1] != "T" else "A")
    variant = Variant("chrA", pos, seq[pos - 1:pos - 1 + ref_len], alt, 1)
    w = variant_windows(fasta, variant, 100)
    edited = seq[:pos - 1] + alt + seq[pos - 1 + ref_len:]
    assert len(w.ref_seq) == len(w.alt_seq) == 100 and w.ref_matches
    assert w.ref_seq == seq[w.start:w.start + 100]
    assert w.alt_seq in edited and w.alt_seq[w.alt_span[0]:w.alt_span[1]] == alt
    assert w.ref_seq[w.ref_span[0]:w.ref_span[1]] == variant.ref
    if 100 < pos < 900:  # centred away from the ends
        assert w.ref_span[0] == 50 - ref_len // 2


def test_missing_contig_or_past_the_end_names_the_line(genome):
    _, fasta = genome
    with pytest.raises(InputError, match="v.vcf line 7.*'chrZ' is not in the genome"):
        variant_windows(fasta, Variant("chrZ", 5, "A", "C", 7), 100, "v.vcf")
    with pytest.raises(InputError, match="line 8.*past the end"):
        variant_windows(fasta, Variant("chrA", 1001, "A", "C", 8), 100)
    assert not fits(Variant("chrA", 5, "A" * 51, "A", 1), 100)


def test_version_and_help_say_indels_are_scored(capsys):
    from bigbird_dna.variants.__main__ import main

    for flag in ("--version", "--help"):
        with pytest.raises(SystemExit) as stop:
            main([flag])
        assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("bigbird-dna-variants ") and "indels are scored" in out


def test_a_contig_the_genome_lacks_names_the_users_file_and_the_record_meant(tmp_path, monkeypatch):
    """A gzip genome is read through a cached copy: the error still names the user's file, and an
    NCBI header's accession is found from the VCF's contig."""
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    fasta = write_fasta(tmp_path / "saureus.fa.gz", {"gi|15926051|ref|NC_002952.2|": lambda_seq()[:1000]})
    variant = Variant("NC_002952.2", 100, "A", "C", 7)
    with open_genome(fasta) as genome, pytest.raises(InputError) as refused:
        variant_windows(genome, variant, 200, "calls.vcf")
    message = str(refused.value)
    assert "calls.vcf line 7" in message and str(fasta) in message and "cache" not in message
    assert "did you mean 'gi|15926051|ref|NC_002952.2|'?" in message
