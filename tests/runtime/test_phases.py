"""runtime/phases.py: one log line per phase, durations that add up, a clock from process start."""

from __future__ import annotations

import logging
import time

import pytest

from bigbird_dna.runtime.phases import (
    counted,
    human_size,
    phase,
    phase_seconds,
    process_start,
    reset_phases,
    run_timing,
)


@pytest.fixture(autouse=True)
def clean_registry():
    reset_phases()
    yield
    reset_phases()


def test_a_phase_logs_its_detail_and_duration_and_a_recurring_one_adds_up(caplog):
    with caplog.at_level(logging.INFO, logger="bigbird_dna.phases"):
        with phase("validate", "first") as timing:
            time.sleep(0.05)
            timing.detail = "12 windows"
        with phase("validate"):
            time.sleep(0.05)
        with phase("test"):
            pass
    assert [r.getMessage() for r in caplog.records][0] == "validate: 12 windows (0.1 s)"
    assert list(phase_seconds()) == ["validate", "test"]
    assert phase_seconds()["validate"] >= 0.1


def test_a_quick_phase_under_quiet_below_is_logged_at_debug_only(caplog):
    with caplog.at_level(logging.DEBUG, logger="bigbird_dna.phases"):
        with phase("index", "read", quiet_below=1.0):
            pass
    (record,) = caplog.records
    assert record.levelno == logging.DEBUG and "index" in phase_seconds()


def test_a_phase_that_fails_is_neither_logged_nor_counted(caplog):
    with caplog.at_level(logging.DEBUG, logger="bigbird_dna.phases"), pytest.raises(ValueError):
        with phase("decompress"):
            raise ValueError("disk full")
    assert not caplog.records and phase_seconds() == {}


def test_run_timing_counts_from_the_given_start_and_lists_the_phases():
    started = time.monotonic() - 2.0
    with phase("fit"):
        pass
    timing = run_timing(started)
    assert timing["seconds"] >= 2.0 and list(timing["phases"]) == ["fit"]


def test_process_start_is_no_later_than_the_import_of_the_phases_module():
    from bigbird_dna.runtime import phases

    assert process_start() <= phases._IMPORTED <= time.monotonic()


def test_sizes_and_counts_read_like_a_person_wrote_them():
    assert human_size(3_210_000_000) == "3.2 GB" and human_size(512) == "512 B"
    assert human_size(1_200_000, "bp") == "1.2 Mbp"
    assert counted(1, "region") == "1 region" and counted(1200, "region") == "1,200 regions"
