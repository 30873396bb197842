"""The one BED reader: plain or gzip, headers and comments skipped, tabs or whitespace, errors that
name the file and line, 0-based half-open intervals."""

from __future__ import annotations

import gzip

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region, bed_lines, read_bed


def _bed(tmp_path, lines: list[str], name: str = "a.bed"):
    path = tmp_path / name
    text = "\n".join(lines) + "\n"
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_plain_bed_reading_skips_headers_comments_track_and_blank_lines(tmp_path):
    path = _bed(tmp_path, ["track name=x", "browser position chr1", "# comment", "", "chrom\tstart\tend",
                           "chr1\t10\t210\tpeak\t0\t+", "chr2\t5\t9"])
    assert read_bed(path) == [("chr1", 10, 210), ("chr2", 5, 9)]
    with pytest.raises(InputError, match="holds no intervals"):
        read_bed(_bed(tmp_path, ["# nothing"], "b.bed"))


def test_gzip_bed_reads_like_the_plain_file(tmp_path):
    lines = ["track name=x", "chr1\t10\t210\tpeak", "chr2\t5\t9"]
    assert read_bed(_bed(tmp_path, lines, "a.bed.gz")) == read_bed(_bed(tmp_path, lines)) == [
        ("chr1", 10, 210), ("chr2", 5, 9)]


def test_lines_without_tabs_split_on_runs_of_whitespace(tmp_path):
    assert read_bed(_bed(tmp_path, ["chr1  10   20 name", "chr2\t30\t40\tmy name"])) == [("chr1", 10, 20),
                                                                                     ("chr2", 30, 40)]
    fields = [line.fields for line in bed_lines(_bed(tmp_path, ["chr2\t30\t40\t\tmy name"]))]
    assert fields == [["chr2", "30", "40", "", "my name"]]  # a tab-separated line keeps its columns


def test_regions_are_0_based_half_open_named_tuples():
    region = Region("chr1", 10, 25)
    assert region.length == 15
    record, start, end = region
    assert (record, start, end) == ("chr1", 10, 25) == region


@pytest.mark.parametrize("line, needle", [
    ("chr1\t300\t300", "empty or negative"),
    ("chr1\t-5\t300", "empty or negative"),
    ("chr1\t400\t300", "empty or negative"),
    ("chr1\tx\t300", "not integers"),
    ("chr1\t300", "expected chrom, start and end"),
])
def test_bad_lines_are_refused_naming_the_file_and_line(tmp_path, line, needle):
    path = _bed(tmp_path, ["chr1\t0\t10", line], "bad.bed.gz")
    with pytest.raises(InputError, match=needle) as err:
        read_bed(path)
    assert f"{path}, line 2" in str(err.value)


def test_a_missing_file_is_an_input_error_at_the_call(tmp_path):
    with pytest.raises(InputError, match="intervals file not found: .*Set data.intervals"):
        bed_lines(tmp_path / "none.bed", "intervals file", "Set data.intervals.")
    with pytest.raises(InputError, match="BED file not found"):
        read_bed(tmp_path / "none.bed")
