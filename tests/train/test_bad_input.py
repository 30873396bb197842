"""Every bad input to ``python -m bigbird_dna.train`` gets one clear error, a non-zero exit, no
traceback, and no checkpoint or export left behind looking valid."""

from __future__ import annotations

import pytest

from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli


def _train(tmp_path, *overrides):
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", *FAST_OVERRIDES, *overrides,
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}, timeout=300)
    return result, run_dir


def _assert_clean_failure(result, run_dir, *needles):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    message = result.stderr.lower()
    for needle in needles:
        assert needle.lower() in message, result.stderr[-2000:]
    assert not (run_dir / "checkpoints").exists()
    assert not (run_dir / "export").exists()
    assert not (run_dir / "summary.json").exists()


def test_missing_fasta(tmp_path):
    result, run_dir = _train(tmp_path, f"data.fasta={tmp_path / 'nope.fa'}")
    _assert_clean_failure(result, run_dir, "not found", "nope.fa", "data.fasta")
    assert result.returncode == 2
    assert not run_dir.exists()  # no config.yaml and empty train.log left looking like a run


def test_empty_fasta(tmp_path):
    empty = tmp_path / "empty.fa"
    empty.write_text("")
    result, run_dir = _train(tmp_path, f"data.fasta={empty}")
    _assert_clean_failure(result, run_dir, "empty")


def test_fasta_of_only_n(tmp_path):
    only_n = tmp_path / "only_n.fa"
    only_n.write_text(">chrN\n" + ("N" * 60 + "\n") * 500)
    result, run_dir = _train(tmp_path, f"data.fasta={only_n}")
    _assert_clean_failure(result, run_dir, "N")
    assert result.returncode == 2


def test_record_shorter_than_a_window(tmp_path):
    short = tmp_path / "short.fa"
    short.write_text(">tiny\n" + "ACGT" * 100 + "\n")
    result, run_dir = _train(tmp_path, f"data.fasta={short}")
    _assert_clean_failure(result, run_dir, "window")
    assert result.returncode == 2


def test_not_a_fasta_file(tmp_path):
    bogus = tmp_path / "reads.txt"
    bogus.write_text("this is not a genome\n")
    result, run_dir = _train(tmp_path, f"data.fasta={bogus}")
    _assert_clean_failure(result, run_dir, "not a FASTA")


def test_unknown_record_in_split_lists(tmp_path):
    result, run_dir = _train(tmp_path, f"data.fasta={LAMBDA}", "data.val_records=[chrZ]", "data.test_records=[chrY]")
    _assert_clean_failure(result, run_dir, "chrZ")


@pytest.mark.parametrize("override, meant", [("data.fastaa=x.fa", "did you mean data.fasta=x.fa?"),
                                             ("trainer.max_stepz=3", "did you mean trainer.max_steps=3?"),
                                             ("max_steps=20", "did you mean trainer.max_steps=20?"),
                                             ("model=huge", None)])
def test_unknown_override(tmp_path, override, meant):
    result, run_dir = _train(tmp_path, override)
    assert result.returncode == 2, result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    last = result.stderr.rstrip().splitlines()[-1]
    assert last.startswith("error: the config could not be composed"), last
    assert "+key=value" not in last  # a new key nothing reads is not the fix
    key = override.split("=")[0].split(".")[-1]
    assert key in result.stderr, result.stderr
    if meant:
        assert meant in last, last


def test_unwritable_output_directory(tmp_path):
    # Tests may run as root, which ignores permission bits: a regular file as parent is unwritable for all.
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={blocker / 'run'}", f"data.fasta={LAMBDA}",
                     *FAST_OVERRIDES, timeout=300)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr, result.stderr
    assert "cannot write to the output directory" in result.stderr
    assert "Seed set" not in result.stdout + result.stderr, "training must not start"


@pytest.mark.parametrize("override, needle", [("data.batch_size=0", "data.batch_size=0"),
                                              ("data.num_workers=-1", "data.num_workers=-1")])
def test_bad_loader_settings(tmp_path, override, needle):
    result, run_dir = _train(tmp_path, f"data.fasta={LAMBDA}", override)
    _assert_clean_failure(result, run_dir, needle)
    assert result.returncode == 2


def test_a_run_that_failed_on_bad_input_can_be_rerun_in_place_and_progress_output_can_be_off(tmp_path):
    failed, run_dir = _train(tmp_path, f"data.fasta={LAMBDA}", "data.batch_size=0")
    assert failed.returncode == 2
    fixed, _ = _train(tmp_path, f"data.fasta={LAMBDA}", "trainer.enable_progress_bar=false", "trainer.max_steps=1")
    assert fixed.returncode == 0, fixed.stderr[-2000:]
    assert (run_dir / "summary.json").exists() and "step 1/" not in fixed.stdout


def test_layout_plot_refuses_a_picture_that_would_not_fit_in_memory(tmp_path):
    result = run_cli("bigbird_dna.attention.plot", "--preset", "dense", "--seq-len", "1000000", "--block-size", "16",
                     "--out", str(tmp_path / "big.png"), timeout=60)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error:") and "--block-size" in result.stderr
    assert not (tmp_path / "big.png").exists()



def test_hints_read_the_chosen_groups():
    """Keys of a chosen group (``data=promoter_labelled`` has ``data.train``) are not flagged, a bare
    key beside them (``max_steps=3``) does not hide them, and a key nothing is close to is named."""
    from bigbird_dna.training.overrides import unknown_key_hints

    hints = unknown_key_hints(["task=promoter", "data=promoter_labelled", "data.train=x.tsv", "max_steps=3",
                               "data.fastaa=1", "data.no_such_setting=1", "hydra.run.dir=/tmp/run"])
    assert hints == ["max_steps=3: did you mean trainer.max_steps=3?",
                     "data.fastaa=1: the config has no key data.fastaa",
                     "data.no_such_setting=1: the config has no key data.no_such_setting"], hints
