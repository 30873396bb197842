"""The key a misspelled or half-written override meant."""

from __future__ import annotations

from bigbird_dna.training.overrides import suggest

KNOWN = ["trainer", "trainer.max_steps", "trainer.max_epochs", "data", "data.fasta", "data.window_bp",
         "callbacks.early.patience", "task.schedule.max_steps"]


def test_a_bare_leaf_finds_its_group_and_a_misspelling_its_key():
    assert suggest("max_steps", KNOWN) == "trainer.max_steps"  # the shortest of the keys ending with it
    assert suggest("data.fastaa", KNOWN) == "data.fasta"
    assert suggest("trainer.max_stepz", KNOWN) == "trainer.max_steps"
    assert suggest("window", KNOWN) is None or suggest("window", KNOWN) == "data.window_bp"


def test_nothing_is_suggested_for_a_known_or_unrelated_key():
    assert suggest("data.fasta", KNOWN) is None
    assert suggest("qqq.zzz", KNOWN) is None
