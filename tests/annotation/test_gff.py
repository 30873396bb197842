"""The GFF3/GTF reader: TSSs, coordinates, format detection, gzip, and line-numbered errors."""

from __future__ import annotations

import pytest

from bigbird_dna.data.annotation.gff import read_annotation
from bigbird_dna.data.annotation.gff_lines import detect_format, gff3_attributes, gtf_attributes
from bigbird_dna.errors import InputError
from tests.annotation.conftest import EXPECTED_TSS, LENGTHS, gff3_text


def tss_set(annotation) -> list[tuple[str, str, int]]:
    return sorted({(t.record, t.strand, t.tss) for t in annotation.transcripts})


@pytest.mark.parametrize("key", ["gff3", "gtf", "gff3_gz", "gtf_gz"])
def test_tss_positions_are_0_based_and_strand_aware(annotated, key):
    annotation = read_annotation(annotated[key], LENGTHS)
    assert annotation.format == ("gtf" if key.startswith("gtf") else "gff3")
    assert tss_set(annotation) == EXPECTED_TSS
    assert len(annotation.transcripts) == 12  # tA1a and tA1b share a TSS; gB3 stands for itself
    by_id = {t.id: t for t in annotation.transcripts}
    assert (by_id["tA1a"].start, by_id["tA1a"].end, by_id["tA1a"].exons) == (2000, 5000, ((2000, 2500), (3000, 5000)))
    assert by_id["tA2a"].tss == 7999 and by_id["tA2a"].strand == "-"
    assert by_id["gB3"].tss == 3500


def test_gene_with_cds_only_is_its_own_transcript(annotated):
    annotation = read_annotation(annotated["gff3"], LENGTHS)
    assert annotation.counts["transcript_types"] == {"gene": 1, "lnc_RNA": 1, "mRNA": 9, "ncRNA": 1}
    assert annotation.counts["genes"] == 10


def test_format_is_detected_from_attributes_without_header(tmp_path):
    body = "chrA\tt\tgene\t1\t10\t.\t+\t.\t"
    (tmp_path / "a.txt").write_text(body + "ID=g\n")
    (tmp_path / "b.txt").write_text(body + 'gene_id "g"; transcript_id "t";\n')
    assert detect_format(tmp_path / "a.txt") == "gff3"
    assert detect_format(tmp_path / "b.txt") == "gtf"


def test_attribute_parsers():
    assert gff3_attributes("ID=a%3Bb;Parent=g1,g2") == {"ID": ["a;b"], "Parent": ["g1", "g2"]}
    assert gtf_attributes('gene_id "g1"; transcript_id "t 1"; exon_number 3;') == {
        "gene_id": "g1", "transcript_id": "t 1", "exon_number": "3"}


def _broken(tmp_path, old: str, new: str):
    text = gff3_text()
    assert old in text
    path = tmp_path / "broken.gff3"
    path.write_text(text.replace(old, new, 1))
    return path, text.replace(old, new, 1).splitlines().index(next(
        line for line in text.replace(old, new, 1).splitlines() if new in line)) + 1


@pytest.mark.parametrize("old,new,expected", [
    ("chrB\ttest\tgene\t1001", "chrZ\ttest\tgene\t1001", ["seqid 'chrZ' is not in the genome FASTA", "chrA, chrB"]),
    ("gene\t18501\t19500", "gene\t18501\t20001", ["ends past the end of chrA", "20,000 bp"]),
    ("mRNA\t18501\t19500\t.\t+", "mRNA\t18501\t19500\t.\t.", ["strand '.'", "tA5"]),
    ("mRNA\t18501\t19500\t.\t+", "mRNA\t18501\t19500\t.\t?", ["strand '?'"]),
    ("gene\t11001\t12500\t.\t+\t.\t", "gene\t11001\t12500\t.\t+\t", ["expected 9 tab-separated columns, found 8"]),
    ("gene\t11001\t12500", "gene\t11001\tx12500", ["must be integers"]),
])
def test_bad_lines_are_input_errors_with_file_and_line(tmp_path, old, new, expected):
    path, number = _broken(tmp_path, old, new)
    with pytest.raises(InputError) as err:
        read_annotation(path, LENGTHS)
    message = str(err.value)
    assert f"{path}, line {number}" in message
    for part in expected:
        assert part in message


def test_no_transcripts_is_an_input_error(tmp_path):
    path = tmp_path / "empty.gff3"
    path.write_text("##gff-version 3\nchrA\tt\tregion\t1\t100\t.\t+\t.\tID=r\n")
    with pytest.raises(InputError, match="no gene or transcript"):
        read_annotation(path, LENGTHS)
