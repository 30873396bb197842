"""The intervals path: windows centred on labelled bins of a genome, 0-based half-open, and clear
errors for files that do not fit the genome or the config."""

from __future__ import annotations

import numpy as np
import pytest

from bigbird_dna.data.chromatin.intervals import (
    IntervalWindows,
    read_labelled_intervals,
    split_by_record,
)
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.intervals import centred_window, check_intervals
from bigbird_dna.genome.sequence import reverse_complement


def _bins(tmp_path, lines: list[str], name: str = "bins.tsv"):
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_windows_are_centred_on_each_bin_as_deepsea_cuts_them():
    assert centred_window(1000, 1200, 1000) == (600, 1600)  # DeepSEA: [start - 400, start + 600)
    assert centred_window(1000, 1200, 8000) == (-2900, 5100)
    assert centred_window(1000, 1201, 1001) == (600, 1601)


def test_labelled_bins_read_with_header_names_and_packed_labels(labelled_genome):
    _, bins, _ = labelled_genome
    intervals = read_labelled_intervals(bins, num_labels=6, label_column=4)
    assert intervals.label_names == [f"feature{j}" for j in range(6)]
    first = bins.read_text().splitlines()[1].split("\t")
    assert (intervals.records[0], intervals.starts[0], intervals.ends[0]) == ("chr1", 0, 200)
    assert intervals.label_row(0).tolist() == [float(v) for v in first[4:]]
    assert intervals.labels.shape == (len(intervals), 1)  # 6 labels packed in one byte


def test_items_are_the_genome_window_with_n_padding_past_the_ends(labelled_genome):
    fasta, bins, records = labelled_genome
    intervals = read_labelled_intervals(bins, 6, 4)
    dataset = IntervalWindows(open_genome(fasta), intervals, context_bp=1000)
    seq, labels, index = dataset[0]  # chr1:0-200 -> window [-400, 600)
    assert seq == "N" * 400 + records["chr1"][:600] and index == 0
    assert np.array_equal(labels, intervals.label_row(0))
    k = next(i for i, (r, s, _) in enumerate(intervals.bins()) if r == "chr1" and s == 1200)
    assert dataset[k][0] == records["chr1"][800:1800]
    last = len(intervals) - 1  # chr8:11400-11600 on a 12000-bp record -> [11000, 12000) fits exactly
    assert dataset[last][0] == records["chr8"][11000:12000]
    wide = IntervalWindows(open_genome(fasta), intervals, context_bp=2000)
    assert wide[last][0] == records["chr8"][10500:12000] + "N" * 500


def test_evaluation_items_add_each_reverse_complement_after_all_forwards(labelled_genome):
    fasta, bins, _ = labelled_genome
    intervals = read_labelled_intervals(bins, 6, 4)
    dataset = IntervalWindows(open_genome(fasta), intervals, context_bp=500, both_strands=True)
    n = len(intervals)
    assert len(dataset) == 2 * n
    forward, reverse = dataset[3], dataset[n + 3]
    assert reverse[0] == reverse_complement(forward[0]) and np.array_equal(reverse[1], forward[1])
    assert reverse[2] == n + 3


def test_chromosome_holdout_splits(labelled_genome):
    _, bins, _ = labelled_genome
    splits = split_by_record(read_labelled_intervals(bins, 6, 4), ["chr7"], ["chr8"])
    assert {r for r in splits["train"].records} == {"chr1"} and set(splits["val"].records) == {"chr7"}
    with pytest.raises(InputError, match="val split holds no intervals"):
        split_by_record(read_labelled_intervals(bins, 6, 4), ["chrX"], ["chr8"])
    with pytest.raises(InputError, match="in both"):
        split_by_record(read_labelled_intervals(bins, 6, 4), ["chr7"], ["chr7"])


def test_contigs_missing_from_the_genome_and_bins_past_an_end_are_refused(labelled_genome):
    lengths = {"chr1": 20000}
    with pytest.raises(InputError, match="contig 'chr2'.*not in the genome FASTA"):
        check_intervals([("chr1", 0, 200), ("chr2", 0, 200)], lengths, 1000, True, "bins.tsv")
    with pytest.raises(InputError, match="runs past the end of chr1"):
        check_intervals([("chr1", 19900, 20100)], lengths, 1000, True, "bins.tsv")
    with pytest.raises(InputError, match="data.pad_ends=true"):
        check_intervals([("chr1", 19600, 19800)], lengths, 1000, False, "bins.tsv")
    check_intervals([("chr1", 19600, 19800)], lengths, 1000, True, "bins.tsv")


def test_label_files_that_disagree_with_the_config_are_refused(tmp_path):
    path = _bins(tmp_path, ["chr1\t0\t200\t1\t0\t1"])
    with pytest.raises(InputError, match="3 label columns.*task.num_labels=919: the label count disagrees"):
        read_labelled_intervals(path, 919)
    with pytest.raises(InputError, match="must be 0 or 1"):
        read_labelled_intervals(_bins(tmp_path, ["chr1\t0\t200\t1\t2\t1"]), 3)
    with pytest.raises(InputError, match="line 2.*empty or negative"):
        read_labelled_intervals(_bins(tmp_path, ["chr1\t0\t200\t1\t0\t1", "chr1\t300\t300\t1\t0\t1"]), 3)
    with pytest.raises(InputError, match="line 2.*integers"):
        read_labelled_intervals(_bins(tmp_path, ["chr1\t0\t200\t1\t0\t1", "chr1\tx\t300\t1\t0\t1"]), 3)
    with pytest.raises(InputError, match="not found"):
        read_labelled_intervals(tmp_path / "none.tsv", 3)

