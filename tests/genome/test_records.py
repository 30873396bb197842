"""A record a source names that the genome lacks: the error says which record was meant."""

from __future__ import annotations

from bigbird_dna.genome.records import closest_record, unknown_record

NCBI = ["gi|15926051|ref|NC_002952.2|", "gi|15926052|ref|NC_002953.3|"]


def test_ncbi_headers_versions_and_chr_prefixes_find_their_record():
    assert closest_record("NC_002952.2", NCBI) == "gi|15926051|ref|NC_002952.2|"
    assert closest_record("NC_002953", NCBI) == "gi|15926052|ref|NC_002953.3|"
    assert closest_record("chr1", ["1", "2", "MT"]) == "1"
    assert closest_record("2", ["chr1", "chr2"]) == "chr2"
    assert closest_record("NC_0029520.2", NCBI) == "gi|15926051|ref|NC_002952.2|"  # a close spelling
    assert closest_record("plasmid", ["chr1", "chr2"]) is None


def test_the_message_names_some_records_and_the_one_meant():
    message = unknown_record("NC_002952.2", NCBI, "saureus.fa.gz", "contig")
    assert message.startswith("contig 'NC_002952.2' is not in saureus.fa.gz (its records: gi|15926051")
    assert message.endswith("did you mean 'gi|15926051|ref|NC_002952.2|'?")
    assert unknown_record("x", ["chr1"], "g.fa").endswith("(its records: chr1).")
