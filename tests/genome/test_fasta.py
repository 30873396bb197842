"""open_genome and FastaGenome: every FASTA flavour reads back exactly what Biopython parses, upper-case."""

from __future__ import annotations

import gzip
import os
import pickle

import pytest
from Bio import bgzf

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.fasta import FastaGenome, prepare_genome
from bigbird_dna.genome.sequence import ambiguous_fraction

# Slices across line ends (60 bp lines), at both record ends, and empty ones.
INTERVALS = [(0, 0), (0, 1), (0, 60), (59, 61), (119, 241), (1000, 1400)]


def assert_reads_match(path, expected: dict[str, str]) -> None:
    """Random access and the streamed pass of ``path`` both give ``expected``, upper-cased."""
    with open_genome(path) as genome:
        assert genome.record_lengths == {name: len(seq) for name, seq in expected.items()}
        for name, seq in expected.items():
            seq = seq.upper()
            for start, end in [*INTERVALS, (len(seq) - 7, len(seq)), (0, len(seq))]:
                if end <= len(seq):
                    assert genome.fetch(name, start, end) == seq[start:end], (name, start, end)
        streamed: dict[str, str] = {}
        for chunk in genome.chunks(chunk_bp=1000):
            assert chunk.start == len(streamed.get(chunk.record, ""))
            streamed[chunk.record] = streamed.get(chunk.record, "") + chunk.seq
        assert streamed == {name: seq.upper() for name, seq in expected.items()}


def test_plain_multi_record_fetch_is_0_based_half_open_like_biopython(write_fasta, toy_records,
                                                                     biopython_records):
    fasta = write_fasta("toy.fa", toy_records)
    genome = open_genome(fasta)
    assert isinstance(genome, FastaGenome) and genome.path == fasta
    assert genome.indexed_path == fasta
    assert biopython_records(fasta) == toy_records
    assert_reads_match(fasta, biopython_records(fasta))


def test_real_lambda_fasta_with_70bp_lines_matches_biopython(lambda_fasta, biopython_records):
    assert_reads_match(lambda_fasta, biopython_records(lambda_fasta))


def test_soft_masked_bases_come_back_upper_case_from_fetch_and_chunks(toy):
    start, end = toy.soft_mask[0] - 5, toy.soft_mask[1] + 5
    assert toy.records["chrA"][slice(*toy.soft_mask)].islower()
    assert toy.genome.fetch("chrA", start, end) == toy.records["chrA"][start:end].upper()
    chr_a = "".join(chunk.seq for chunk in toy.genome.chunks(chunk_bp=500) if chunk.record == "chrA")
    assert chr_a == toy.records["chrA"].upper()


def test_n_runs_and_iupac_codes_are_kept_not_mapped_to_bases(toy):
    assert set(toy.genome.fetch("chrA", *toy.n_gap)) == {"N"}
    chr_b = toy.genome.fetch("chrB", 0, len(toy.records["chrB"]))
    assert chr_b == toy.records["chrB"]
    assert set(toy.iupac) <= set(chr_b)


def test_gzip_is_decompressed_once_into_the_cache(tmp_path, write_fasta, toy_records, cache_dir,
                                                  monkeypatch):
    plain = write_fasta("toy.fa", toy_records)
    packed = tmp_path / "toy.fa.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    first = open_genome(packed).indexed_path
    assert first.parent == cache_dir and first.read_bytes() == plain.read_bytes()
    mtime = first.stat().st_mtime_ns

    def no_second_decompression(*args, **kwargs):
        raise AssertionError("the gzip was decompressed a second time")

    monkeypatch.setattr(gzip, "open", no_second_decompression)
    genome = open_genome(packed)
    assert genome.indexed_path == first
    assert first.stat().st_mtime_ns == mtime
    assert genome.record_lengths == {name: len(seq) for name, seq in toy_records.items()}
    assert genome.fetch("chrC", 100, 400) == toy_records["chrC"][100:400].upper()
    assert_reads_match(first, toy_records)


def test_bgzip_is_read_in_place_across_blocks(tmp_path, write_fasta, lambda_seq, cache_dir):
    records = {f"copy{i}": lambda_seq[i:] + lambda_seq[:i] for i in range(3)}  # 145 kb: 3 BGZF blocks
    plain = write_fasta("three.fa", records)
    packed = tmp_path / "three.fa.gz"
    with bgzf.BgzfWriter(str(packed), "wb") as handle:
        handle.write(plain.read_bytes())
    assert open_genome(packed).indexed_path == packed
    assert not cache_dir.exists()
    assert_reads_match(packed, records)  # whole-record fetches span the 64 KiB block ends


def test_bgzip_reads_starting_on_a_full_block_boundary(tmp_path, write_fasta, lambda_seq, cache_dir):
    """Biopython (like NCBI) fills BGZF blocks to 64 KiB: a read whose first base is a block's first
    byte made pyfaidx 0.9 seek to offset 65536 of the block before and raise."""
    seq = lambda_seq * 2
    plain = write_fasta("two.fa", {"two": seq})
    packed = tmp_path / "two.fa.gz"
    with bgzf.BgzfWriter(str(packed), "wb") as handle:
        handle.write(plain.read_bytes())
    genome = open_genome(packed)
    for start in range(64000, 65000):  # the base at uncompressed byte 65536 lies here for any line width >= 60
        assert genome.fetch("two", start, start + 10) == seq[start:start + 10].upper(), start


def test_ambiguous_fraction_counts_n_and_iupac_in_any_case():
    assert ambiguous_fraction("ACGTacgt") == 0.0
    assert ambiguous_fraction("ACGTN") == pytest.approx(0.2)
    assert ambiguous_fraction("acgtr") == pytest.approx(0.2)
    assert ambiguous_fraction("NNnn") == 1.0
    assert ambiguous_fraction("") == 1.0


def test_fetch_outside_a_record_or_of_an_unknown_record_is_an_input_error(toy):
    with pytest.raises(InputError, match=r"chrShort:0-301 runs outside .* 300 bp long"):
        toy.genome.fetch("chrShort", 0, 301)
    with pytest.raises(InputError, match=r"'chrZ' is not in .*toy\.fa \(its records: chrA, chrB"):
        toy.genome.fetch("chrZ", 0, 1)


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"genome FASTA not found: .*nope\.fa\. Set data\.fasta"):
        open_genome(tmp_path / "nope.fa")


def test_empty_file_is_an_input_error(tmp_path):
    (tmp_path / "empty.fa").touch()
    with pytest.raises(InputError, match=r"genome FASTA is empty: .*empty\.fa"):
        open_genome(tmp_path / "empty.fa")


def test_a_file_in_no_genome_format_is_refused_naming_what_is_accepted(tmp_path):
    (tmp_path / "table.csv").write_text("chrom,start,end\nchr1,0,10\n")
    with pytest.raises(InputError, match=r"table\.csv is not a genome file that bigbird_dna reads: it is not a "
                                         r"FASTA file \(plain, gzip or bgzip; its first line a '>' record header\)"):
        open_genome(tmp_path / "table.csv")
    with pytest.raises(InputError, match=r"table\.csv is not a FASTA file: it should start with '>'"):
        prepare_genome(tmp_path / "table.csv")


def test_ragged_line_lengths_are_an_input_error_naming_the_fix(tmp_path, lambda_seq):
    ragged = tmp_path / "ragged.fa"
    ragged.write_text(f">chr1\n{lambda_seq[:60]}\n{lambda_seq[60:90]}\n{lambda_seq[90:150]}\n")
    with pytest.raises(InputError, match=r"malformed FASTA .*ragged\.fa.*every line of a record but its "
                                         r"last must have the same length"):
        prepare_genome(ragged)


def test_headers_without_sequence_are_an_input_error(tmp_path):
    (tmp_path / "headers.fa").write_text(">chr1\n>chr2\n")
    with pytest.raises(InputError, match=r"every record in .*headers\.fa is empty"):
        prepare_genome(tmp_path / "headers.fa")


def test_a_genome_opens_its_handle_once_per_process_and_pickles_without_it(toy):
    genome = open_genome(toy.fasta)
    assert genome.record_lengths and genome.opened_by is None  # preparing opens no lasting handle
    genome.fetch("chrC", 0, 10)
    handle = genome._handle
    assert genome.opened_by == os.getpid()
    genome.fetch("chrC", 10, 20)
    assert genome._handle is handle  # one handle per process, kept open
    copy = pickle.loads(pickle.dumps(genome))  # what a DataLoader worker receives
    assert copy.opened_by is None and copy.path == genome.path and copy.record_lengths == genome.record_lengths
    assert copy.fetch("chrC", 0, 50) == toy.records["chrC"][:50]
    genome._pid = -1  # as if inherited through fork: the next fetch opens a fresh handle
    genome.fetch("chrC", 0, 10)
    assert genome._handle is not handle and genome.opened_by == os.getpid()
    genome.close()
    copy.close()
    assert genome.opened_by is None
