"""resolve_splits says what it dropped (how many regions of how many, their bases) and logs each
split's size as the ``splits`` phase."""

from __future__ import annotations

import logging

from bigbird_dna.genome.splits import resolve_splits
from bigbird_dna.runtime.phases import phase_seconds, reset_phases

# 195 records; with 5% held out at each end, the ends of the 58 short ones are under one window.
LENGTHS = {**{f"chr{i}": 200_000 for i in range(137)}, **{f"scaffold{i}": 50_000 for i in range(58)}}


def test_held_out_ends_shorter_than_a_window_are_counted_in_a_warning(caplog):
    with caplog.at_level(logging.INFO, logger="bigbird_dna"):
        splits = resolve_splits(LENGTHS, None, [], [], holdout_fraction=0.05, min_length=4096)
    assert len(splits["val"]) == len(splits["test"]) == 137 and len(splits["train"]) == 195
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # each dropped end is 2,500 bp: 58 of them are 145 kbp
    assert "dropped 58 of 195 val regions shorter than one window (4,096 bp): 145.0 kbp not used" in warnings[0]
    assert "dropped 58 of 195 test regions" in warnings[1] and len(warnings) == 2
    assert "splits: train 27.3 Mbp in 195 regions, val 1.4 Mbp in 137 regions, test 1.4 Mbp in 137 regions" \
        in caplog.text


def test_nothing_dropped_means_no_warning_and_the_phase_is_timed(caplog):
    reset_phases()
    with caplog.at_level(logging.INFO, logger="bigbird_dna"):
        resolve_splits({"chr1": 100_000}, None, [], [], holdout_fraction=0.1, min_length=1000)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert "splits" in phase_seconds()
