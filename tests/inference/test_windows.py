"""Window tiling of predict, streamed in chunks: the same windows as the whole-record path, memory
that does not grow with the record, and the record-name check of the one pass."""

from __future__ import annotations

import random
import tracemalloc

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.inference.windows import iter_windows, window_starts
from tests.promoter.conftest import write_fasta


@pytest.mark.parametrize("length, window, stride, starts", [
    (250, 100, 100, [0, 100, 150]),  # 0, stride, then a tail window aligned to the record end
    (250, 100, 40, [0, 40, 80, 120, 150]),
    (200, 100, 100, [0, 100]),  # the windows end exactly at the record end: no extra window
    (300, 100, 150, [0, 150, 200]),  # stride > window: the gap is not scored, the end is
    (100, 100, 7, [0]),  # exactly one window long
    (60, 100, 100, [0]),  # shorter than a window: one window, as long as the record
])
def test_window_starts_cover_the_record_with_an_end_aligned_last_window(length, window, stride, starts):
    assert window_starts(length, window, stride) == starts


@pytest.mark.parametrize("window, stride", [(0, 10), (10, 0), (-1, 5)])
def test_window_and_stride_must_be_positive(window, stride, tmp_path):
    with pytest.raises(InputError, match="must be positive"):
        window_starts(100, window, stride)
    fasta = write_fasta(tmp_path / "g.fa", {"chr1": "ACGT" * 10})
    with pytest.raises(InputError, match="must be positive"):
        list(iter_windows([fasta], window, stride))


def test_windows_are_0_based_half_open_with_the_minus_strand_right_after_the_plus(tmp_path):
    seq = "ACGTTGCA" * 30 + "NNNN"  # 244 bp
    fasta = tmp_path / "g.fa"
    fasta.write_text(f">chr1 desc\n{seq}\n>short\nACGTN\n")
    windows = list(iter_windows([fasta], window=100, stride=100))
    assert [(w.record, w.start, w.end, w.strand) for w in windows] == [
        ("chr1", 0, 100, "+"), ("chr1", 0, 100, "-"), ("chr1", 100, 200, "+"), ("chr1", 100, 200, "-"),
        ("chr1", 144, 244, "+"), ("chr1", 144, 244, "-"), ("short", 0, 5, "+"), ("short", 0, 5, "-")]
    for plus, minus in zip(windows[::2], windows[1::2]):
        assert plus.seq == (seq[plus.start:plus.end] if plus.record == "chr1" else "ACGTN")
        assert minus.seq == reverse_complement(plus.seq) and minus.n_fraction == plus.n_fraction
    assert windows[4].n_fraction == pytest.approx(0.04) and windows[6].n_fraction == pytest.approx(0.2)
    assert [w.strand for w in iter_windows([fasta], 100, 100, strands=("-",))] == ["-"] * 4


def _genome(seed: int = 0) -> dict[str, str]:
    """Records shorter than, equal to, a multiple of and not a multiple of a 50-bp stride, with N
    runs and soft-masked (lowercase) stretches."""
    rng = random.Random(seed)
    records = {}
    for name, length in [("tiny", 7), ("stride", 50), ("window", 120), ("odd", 1013), ("multiple", 1000),
                         ("long", 4321), ("one", 1)]:
        seq = list(rng.choice("ACGT") for _ in range(length))
        for _ in range(length // 300):  # N runs and lowercase stretches
            a, run = rng.randrange(length), rng.randrange(1, 120)
            seq[a:a + run] = ["N"] * len(seq[a:a + run])
            b = rng.randrange(length)
            seq[b:b + 200] = [c.lower() for c in seq[b:b + 200]]
        records[name] = "".join(seq)
    return records


def _whole_record_windows(records: dict[str, str], window: int, stride: int, strands=("+", "-")):
    """The windows the pre-streaming scan cut: whole records, sliced at :func:`window_starts`."""
    for record, seq in records.items():
        for start in window_starts(len(seq), window, stride):
            forward = seq[start:start + window]
            for strand in strands:
                oriented = reverse_complement(forward) if strand == "-" else forward
                yield record, start, start + len(forward), strand, oriented, ambiguous_fraction(forward)


@pytest.mark.parametrize("window, stride", [(120, 50), (50, 50), (100, 130), (300, 7)])
@pytest.mark.parametrize("chunk_bp", [1, 37, 64, 1 << 20])
def test_streamed_windows_equal_the_whole_record_windows(tmp_path, window, stride, chunk_bp):
    records = _genome()
    assert any(base.islower() for seq in records.values() for base in seq)  # soft-masked in the file
    upper = {name: seq.upper() for name, seq in records.items()}  # and upper-case in every window
    expected = list(_whole_record_windows(upper, window, stride))
    for suffix, width in ((".fa", 60), (".fa.gz", 13)):
        fasta = write_fasta(tmp_path / f"g{suffix}", records, width=width)
        got = [(w.record, w.start, w.end, w.strand, w.seq, w.n_fraction)
               for w in iter_windows([fasta], window, stride, chunk_bp=chunk_bp)]
        assert got == expected, (suffix, window, stride, chunk_bp)


def _peak_bytes(fasta, chunk_bp: int) -> int:
    tracemalloc.start()
    try:
        for _ in iter_windows([fasta], 1000, 50_000, strands=("+",), chunk_bp=chunk_bp):
            pass
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_does_not_grow_with_the_record_length(tmp_path):
    rng = random.Random(1)
    short = write_fasta(tmp_path / "short.fa", {"r": "".join(rng.choices("ACGT", k=200_000))})
    long = write_fasta(tmp_path / "long.fa", {"r": "".join(rng.choices("ACGTn", k=3_000_000))})
    small, large = _peak_bytes(short, 50_000), _peak_bytes(long, 50_000)
    # a whole 3-Mbp record as one str would be 3 MB; chunks of 50 kbp keep the peak near 0.2 MB
    assert large < 1_000_000 and large < 2 * small + 200_000, (small, large)


def test_a_record_name_twice_is_refused_during_the_pass(tmp_path):
    one = write_fasta(tmp_path / "one.fa", {"chrA": "ACGT" * 30, "chrB": "ACGT" * 30})
    other = write_fasta(tmp_path / "other.fa", {"chrC": "ACGT" * 30, "chrA": "ACGT"})
    scanned = []
    with pytest.raises(InputError, match="'chrA' appears in both .*one.fa and .*other.fa"):
        for w in iter_windows([one, other], 100, 100, strands=("+",)):
            scanned.append(w.record)
    assert scanned == ["chrA", "chrA", "chrB", "chrB", "chrC", "chrC"]  # refused when the scan reaches it


def test_a_bad_character_is_refused_at_its_chunk(tmp_path):
    fasta = tmp_path / "g.fa"
    fasta.write_text(">chrA\n" + "ACGT" * 100 + "\n" + "ACGX" + "\n")
    windows = iter_windows([fasta], 100, 100, strands=("+",), chunk_bp=100)
    assert next(windows).start == 0  # the first chunk is clean and scanned before the bad one is read
    with pytest.raises(InputError, match=r"record 'chrA': \['X'\] are not nucleotide codes"):
        list(windows)
