"""resolve_splits and write_split_manifest: disjoint regions, both split modes, clear errors."""

from __future__ import annotations

import json
from itertools import combinations

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome.splits import Region, resolve_splits, write_split_manifest

LENGTHS = {"chr1": 10_000, "chr2": 8_000, "chr3": 6_000, "chrM": 300}


def assert_disjoint(splits: dict[str, list[Region]]) -> None:
    for (name_a, regions_a), (name_b, regions_b) in combinations(splits.items(), 2):
        for a in regions_a:
            for b in regions_b:
                overlap = a.record == b.record and a.start < b.end and b.start < a.end
                assert not overlap, f"{name_a} {a} overlaps {name_b} {b}"


def test_region_is_half_open():
    assert Region("chr1", 10, 25).length == 15


def test_record_lists_hold_out_whole_records_and_train_on_the_rest():
    splits = resolve_splits(LENGTHS, None, ["chr2"], ["chr3"], holdout_fraction=0.1, min_length=500)
    assert splits == {"train": [Region("chr1", 0, 10_000)],  # chrM is shorter than a window
                      "val": [Region("chr2", 0, 8_000)],
                      "test": [Region("chr3", 0, 6_000)]}
    assert_disjoint(splits)


def test_an_explicit_train_list_is_used_as_given():
    splits = resolve_splits(LENGTHS, ["chr3"], ["chr1"], ["chr2"], holdout_fraction=0.1, min_length=100)
    assert splits["train"] == [Region("chr3", 0, 6_000)]


def test_single_record_falls_back_to_holding_out_fractions_at_its_end():
    splits = resolve_splits({"lambda": 48_502}, None, [], [], holdout_fraction=0.1, min_length=1000)
    assert splits == {"train": [Region("lambda", 0, 38_801)],
                      "val": [Region("lambda", 38_801, 43_651)],
                      "test": [Region("lambda", 43_651, 48_502)]}


def test_fraction_fallback_splits_every_record_disjointly_and_covers_it():
    splits = resolve_splits(LENGTHS, None, [], [], holdout_fraction=0.05, min_length=200)
    assert_disjoint(splits)
    for record, length in LENGTHS.items():
        if record == "chrM":  # its 15 bp held-out pieces are shorter than a window
            continue
        pieces = sorted((r for regions in splits.values() for r in regions if r.record == record),
                        key=lambda r: r.start)
        assert [(p.start, p.end) for p in pieces] == [(0, pieces[1].start), (pieces[1].start, pieces[2].start),
                                                      (pieces[2].start, length)]
        assert pieces[2].length == pytest.approx(0.05 * length, abs=1)
    assert Region("chrM", 0, 270) in splits["train"]


def test_unknown_record_is_an_input_error_listing_known_records():
    with pytest.raises(InputError, match=r"'chr9' in the val split list is not in the genome\. "
                                         r"Known records: chr1, chr2, chr3, chrM"):
        resolve_splits(LENGTHS, None, ["chr9"], ["chr3"], holdout_fraction=0.1, min_length=100)


def test_a_record_in_two_splits_is_an_input_error():
    with pytest.raises(InputError, match=r"'chr2' is in both the train and the val split lists"):
        resolve_splits(LENGTHS, ["chr1", "chr2"], ["chr2"], ["chr3"], holdout_fraction=0.1,
                       min_length=100)


def test_val_without_test_is_an_input_error_naming_the_empty_split():
    with pytest.raises(InputError, match=r"the test split has no records\. Give data\.val_records and "
                                         r"data\.test_records together"):
        resolve_splits(LENGTHS, None, ["chr2"], [], holdout_fraction=0.1, min_length=100)


def test_a_record_shorter_than_a_window_as_the_only_source_of_a_split_is_an_input_error():
    with pytest.raises(InputError, match=r"the val split has no region as long as one window \(1000 bp\): "
                                         r"its longest, chrM:0-300, is 300 bp\. Lower data\.window_bp"):
        resolve_splits(LENGTHS, None, ["chrM"], ["chr3"], holdout_fraction=0.1, min_length=1000)


def test_held_out_fractions_shorter_than_a_window_are_an_input_error():
    with pytest.raises(InputError, match=r"the val split has no region as long as one window \(8192 bp\)"):
        resolve_splits({"lambda": 48_502}, None, [], [], holdout_fraction=0.1, min_length=8192)


@pytest.mark.parametrize("fraction", [0.0, 0.5, -0.1])
def test_holdout_fraction_outside_0_to_half_is_an_input_error(fraction):
    with pytest.raises(InputError, match=r"holdout_fraction=.* must lie in \(0, 0\.5\)"):
        resolve_splits(LENGTHS, None, [], [], holdout_fraction=fraction, min_length=100)


def test_manifest_records_regions_totals_and_extra_info(tmp_path):
    splits = resolve_splits(LENGTHS, None, ["chr2"], ["chr3"], holdout_fraction=0.1, min_length=100)
    path = write_split_manifest(tmp_path / "run" / "splits.json", splits, "/genomes/toy.fa",
                                {"window_bp": 100, "seed": 7})
    manifest = json.loads(path.read_text())
    assert manifest["fasta"] == "/genomes/toy.fa" and manifest["window_bp"] == 100 and manifest["seed"] == 7
    assert manifest["coordinates"] == "0-based, half-open (BED)"
    assert manifest["splits"]["train"] == {
        "num_regions": 2, "total_bp": 10_300,
        "regions": [{"record": "chr1", "start": 0, "end": 10_000}, {"record": "chrM", "start": 0, "end": 300}],
    }
    assert manifest["splits"]["test"]["total_bp"] == 6_000


def test_a_failed_manifest_write_leaves_the_old_manifest_and_no_temporary_file(tmp_path):
    splits = resolve_splits(LENGTHS, None, ["chr2"], ["chr3"], holdout_fraction=0.1, min_length=100)
    path = write_split_manifest(tmp_path / "splits.json", splits, "toy.fa", {"seed": 1})
    before = path.read_text()
    with pytest.raises(TypeError):
        write_split_manifest(path, splits, "toy.fa", {"seed": object()})  # not JSON-serialisable
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["splits.json"]


SHORT_RECORDS = {f"up{i:03d}": 2_000 for i in range(100)}


def test_short_records_cannot_hold_out_their_ends_and_the_error_names_holdout_records():
    with pytest.raises(InputError, match=r"no region as long as one window \(510 bp\).*data.holdout_records=0.05"):
        resolve_splits(SHORT_RECORDS, None, [], [], holdout_fraction=0.05, min_length=510)


def test_holdout_records_holds_out_a_seeded_share_of_whole_records():
    splits = resolve_splits(SHORT_RECORDS, None, [], [], holdout_fraction=0.05, min_length=510,
                            holdout_records=0.05, seed=3)
    assert [len(splits[s]) for s in ("train", "val", "test")] == [90, 5, 5]
    assert all(r.start == 0 and r.end == 2_000 for regions in splits.values() for r in regions)
    assert_disjoint(splits)
    again = resolve_splits(SHORT_RECORDS, None, [], [], 0.05, 510, holdout_records=0.05, seed=3)
    other = resolve_splits(SHORT_RECORDS, None, [], [], 0.05, 510, holdout_records=0.05, seed=4)
    assert again == splits and other["val"] != splits["val"]


def test_holdout_records_refuses_record_lists_a_bad_share_and_too_few_records():
    with pytest.raises(InputError, match="one or the other"):
        resolve_splits(LENGTHS, None, ["chr2"], [], 0.05, 100, holdout_records=0.1)
    with pytest.raises(InputError, match=r"holdout_records=0.6 must lie in \(0, 0.5\)"):
        resolve_splits(SHORT_RECORDS, None, [], [], 0.05, 100, holdout_records=0.6)
    with pytest.raises(InputError, match="at least 3 records"):
        resolve_splits({"a": 1000, "b": 1000}, None, [], [], 0.05, 100, holdout_records=0.1)
