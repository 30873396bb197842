"""GenomeWindows: windows inside their regions, N filtering, RC augmentation, seeding and sharding."""

from __future__ import annotations

import os
from collections import Counter

import pytest
from torch.utils.data import DataLoader

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.genome.splits import Region, resolve_splits
from bigbird_dna.genome.windows import GenomeWindows
from bigbird_dna.runtime.shards import Shard

WINDOW = 400


def whole(records: dict[str, str], *names: str) -> list[Region]:
    return [Region(name, 0, len(records[name])) for name in names]


def windows(toy, regions, num_windows=200, shard=(0, 1, 0, 1), seed=0, **kwargs) -> list[dict]:
    """All windows of one (rank, world_size, worker, num_workers) shard."""
    return list(GenomeWindows(toy.genome, regions, WINDOW, num_windows, seed, **kwargs).iter_shard(Shard(*shard)))


def key(window: dict) -> tuple:
    return window["record"], window["start"], window["end"], window["strand"], window["seq"]


def test_reverse_complement_handles_case_and_iupac_codes():
    assert reverse_complement("AACGTn") == "nACGTT"
    assert reverse_complement("RYKMSWBDHVN") == "NBDHVWSKMRY"
    assert reverse_complement("ryKM") == "KMry"
    seq = "ACGTRYKMSWBDHVNacgtrykmswbdhvn"
    assert reverse_complement(reverse_complement(seq)) == seq


def test_windows_lie_inside_their_split_regions_and_match_the_source(toy):
    lengths = {name: len(seq) for name, seq in toy.records.items()}
    splits = resolve_splits(lengths, None, [], [], holdout_fraction=0.1, min_length=WINDOW)
    for split, regions in splits.items():
        for window in windows(toy, regions, num_windows=100, fixed=split != "train"):
            assert any(r.record == window["record"] and r.start <= window["start"]
                       and window["end"] <= r.end for r in regions), (split, window)
            assert window["end"] - window["start"] == len(window["seq"]) == WINDOW
            assert window["seq"] == toy.records[window["record"]][window["start"]:window["end"]].upper()


def test_records_are_sampled_in_proportion_to_their_length(toy):
    counts = Counter(w["record"] for w in windows(toy, whole(toy.records, "chrB", "chrC"), num_windows=400))
    assert counts["chrB"] > 120 and counts["chrC"] > 120  # expected 195 and 205


def test_windows_above_the_n_threshold_are_skipped_and_n_is_kept(toy):
    chr_a = whole(toy.records, "chrA")
    filtered = windows(toy, chr_a, max_ambiguous_fraction=0.1)
    assert max(ambiguous_fraction(w["seq"]) for w in filtered) <= 0.1
    assert any("N" in w["seq"] for w in filtered)  # short N runs stay N
    unfiltered = windows(toy, chr_a, max_ambiguous_fraction=1.0)
    assert max(ambiguous_fraction(w["seq"]) for w in unfiltered) > 0.1  # the gap is reachable


def test_iupac_codes_are_kept_in_windows(toy):
    seqs = [w["seq"] for w in windows(toy, whole(toy.records, "chrB"))]
    assert set("".join(seqs)) & set(toy.iupac)


def test_soft_masked_bases_come_back_upper_case(toy):
    mask = [Region("chrA", toy.soft_mask[0] - 100, toy.soft_mask[1] + 100)]
    drawn = windows(toy, mask, num_windows=20)
    assert any(toy.records["chrA"][w["start"]:w["end"]] != w["seq"] for w in drawn)  # soft-masked in the file
    assert all(w["seq"] == toy.records["chrA"][w["start"]:w["end"]].upper() for w in drawn)


def test_reverse_complement_augmentation_reports_the_minus_strand(toy):
    regions = whole(toy.records, "chrB")
    for window in windows(toy, regions, num_windows=20, reverse_complement_prob=1.0):
        forward = toy.records["chrB"][window["start"]:window["end"]]
        assert window["strand"] == "-" and window["seq"] == reverse_complement(forward)
    strands = Counter(w["strand"] for w in windows(toy, regions, reverse_complement_prob=0.5))
    assert strands["+"] > 60 and strands["-"] > 60


def test_same_seed_epoch_rank_and_worker_give_the_same_windows(toy):
    regions = whole(toy.records, "chrB", "chrC")
    assert windows(toy, regions, shard=(1, 2, 1, 2)) == windows(toy, regions, shard=(1, 2, 1, 2))


@pytest.mark.parametrize("other", [dict(shard=(1, 2, 0, 2)), dict(shard=(0, 2, 1, 2)),
                                   dict(epoch=1), dict(seed=1)], ids=["rank", "worker", "epoch", "seed"])
def test_each_rank_worker_epoch_and_seed_draws_its_own_windows(toy, other):
    regions = whole(toy.records, "chrB", "chrC")
    base = GenomeWindows(toy.genome, regions, WINDOW, 40, seed=0)
    changed = GenomeWindows(toy.genome, regions, WINDOW, 40, seed=other.get("seed", 0))
    changed.set_epoch(other.get("epoch", 0))
    ours = {key(w) for w in base.iter_shard(Shard(0, 2, 0, 2))}
    theirs = {key(w) for w in changed.iter_shard(Shard(*other.get("shard", (0, 2, 0, 2))))}
    assert len(ours & theirs) <= 1


def test_shards_split_num_windows_exactly_with_ranks_differing_by_at_most_one(toy):
    dataset = GenomeWindows(toy.genome, whole(toy.records, "chrC"), WINDOW, 103, seed=0)
    per_rank = [sum(len(list(dataset.iter_shard(Shard(rank, 2, worker, 3)))) for worker in range(3))
                for rank in range(2)]
    assert per_rank == [52, 51]
    assert len(dataset) == 103  # not distributed here: the one rank yields everything


def test_fixed_windows_are_the_same_every_epoch_and_for_any_sharding(toy):
    dataset = GenomeWindows(toy.genome, whole(toy.records, "chrA", "chrC"), WINDOW, 60, seed=3, fixed=True)
    single = [key(w) for w in dataset.iter_shard(Shard(0, 1, 0, 1))]
    dataset.set_epoch(5)
    assert [key(w) for w in dataset.iter_shard(Shard(0, 1, 0, 1))] == single
    shards = [[key(w) for w in dataset.iter_shard(Shard(rank, 2, worker, 2))]
              for rank in range(2) for worker in range(2)]
    assert [len(shard) for shard in shards] == [15, 15, 15, 15]
    assert sorted(k for shard in shards for k in shard) == sorted(single)  # a partition: none repeated
    assert {k[3] for k in single} == {"+"}


def test_fixed_windows_spread_over_the_regions_and_skip_the_n_gap(toy):
    starts = sorted(w["start"] for w in windows(toy, whole(toy.records, "chrA"), num_windows=20, fixed=True))
    assert len(starts) == 20
    assert not any(toy.n_gap[0] - WINDOW + 40 < s < toy.n_gap[1] - 40 for s in starts)  # > 10% N
    assert starts[0] < 1000 and starts[-1] > 11_000 - WINDOW


def test_fixed_windows_reject_reverse_complement_augmentation(toy):
    with pytest.raises(InputError, match=r"set reverse_complement_prob=0 for fixed"):
        GenomeWindows(toy.genome, whole(toy.records, "chrC"), WINDOW, 10, seed=0, fixed=True,
                      reverse_complement_prob=0.5)


class PidTaggedWindows(GenomeWindows):
    """Adds the process that produced each window and the process that opened its genome handle."""

    def __iter__(self):
        for window in super().__iter__():
            yield {**window, "pid": os.getpid(), "opened_by": self.genome.opened_by}


def test_dataloader_workers_each_open_their_own_genome_and_draw_different_windows(toy):
    dataset = PidTaggedWindows(toy.genome, whole(toy.records, "chrB", "chrC"), WINDOW, 64, seed=0)
    next(iter(dataset))  # the main process opens a handle first, which forked workers inherit
    batches = list(DataLoader(dataset, batch_size=8, num_workers=2))
    assert sum(len(b["seq"]) for b in batches) == 64
    by_pid: dict[int, set] = {}
    for batch in batches:
        assert batch["opened_by"].tolist() == batch["pid"].tolist()  # never the inherited handle
        for pid, start, record in zip(batch["pid"].tolist(), batch["start"].tolist(), batch["record"]):
            by_pid.setdefault(pid, set()).add((record, start))
    assert len(by_pid) == 2 and os.getpid() not in by_pid
    first, second = by_pid.values()
    assert len(first & second) <= 1


def test_dataloader_workers_share_fixed_windows_without_duplicates(toy):
    dataset = GenomeWindows(toy.genome, whole(toy.records, "chrA", "chrC"), WINDOW, 30, seed=0, fixed=True)
    loaded = [(record, start) for batch in DataLoader(dataset, batch_size=4, num_workers=2)
              for record, start in zip(batch["record"], batch["start"].tolist())]
    assert sorted(loaded) == sorted((w["record"], w["start"]) for w in dataset.iter_shard(Shard(0, 1, 0, 1)))


@pytest.mark.parametrize("fixed", [False, True], ids=["random", "fixed"])
def test_an_all_n_genome_is_an_input_error_naming_the_threshold(write_fasta, fixed):
    # (a genome with no base at all is refused when it is prepared; here only chrUn is all N)
    genome = open_genome(write_fasta("gaps.fa", {"chrUn": "N" * 2000, "chrA": "ACGT" * 10}))
    dataset = GenomeWindows(genome, [Region("chrUn", 0, 2000)], WINDOW, 5, seed=0, fixed=fixed)
    with pytest.raises(InputError, match=r"no 400 bp window with at most 10% N/ambiguous bases .* "
                                         r"Raise data\.max_n_fraction"):
        next(iter(dataset))


def test_regions_shorter_than_a_window_are_an_input_error(toy):
    with pytest.raises(InputError, match=r"no region is as long as one window \(400 bp\); the longest is "
                                         r"300 bp\. Lower data\.window_bp"):
        GenomeWindows(toy.genome, whole(toy.records, "chrShort"), WINDOW, 10, seed=0)


def test_construction_does_not_open_the_genome(toy):
    dataset = GenomeWindows(toy.genome, whole(toy.records, "chrC"), WINDOW, 10, seed=0)
    assert dataset.genome.opened_by is None
