"""A run's record is never overwritten, and a resume trains on what the run started with.

Real CLI runs: a rerun into an existing run directory and a resume that changes the genome or the
window are refused with one ``error:`` line, exit status 2, and every file of the run unchanged;
a resume given none of the original overrides takes them from the run's ``config.yaml``.
"""

from __future__ import annotations

import hashlib

import pytest
import yaml

from tests.conftest import FAST_OVERRIDES, LAMBDA, REPO, run_cli

pytestmark = pytest.mark.slow

COMMON = [*FAST_OVERRIDES, f"data.fasta={LAMBDA}", "data.window_bp=900", "trainer.max_steps=2"]


def snapshot(run_dir) -> dict[str, str]:
    """sha256 of every file under ``run_dir``."""
    return {str(p.relative_to(run_dir)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def assert_refused(result, before: dict, run_dir, *needles: str) -> None:
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    for needle in needles:
        assert needle in errors[0], errors[0]
    after = snapshot(run_dir)
    assert {k: v for k, v in after.items() if not k.startswith(".hydra") and k != "train.log"} == \
        {k: v for k, v in before.items() if not k.startswith(".hydra") and k != "train.log"}


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("runs") / "first"
    result = run_cli("bigbird_dna.train", *COMMON, f"hydra.run.dir={run_dir}", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return run_dir


def test_a_new_run_into_an_existing_run_directory_is_refused(finished_run):
    before = snapshot(finished_run)
    result = run_cli("bigbird_dna.train", *COMMON, f"hydra.run.dir={finished_run}", timeout=300)
    assert_refused(result, before, finished_run, "already holds a run", "ckpt_path=last", "another directory")


@pytest.mark.parametrize("change, key", [("data.window_bp=1024", "data.window_bp"),
                                         (f"data.fasta={REPO / 'sample_data' / 'h_pylori_F32.fa'}", "data.fasta"),
                                         ("model.hidden_size=64", "model.hidden_size")])
def test_a_resume_that_changes_what_the_model_sees_is_refused(finished_run, change, key):
    before = snapshot(finished_run)
    result = run_cli("bigbird_dna.train", "ckpt_path=last", f"hydra.run.dir={finished_run}", change, timeout=300)
    assert_refused(result, before, finished_run, key, "resume.allow_changes=true")


def test_a_resume_without_the_original_overrides_uses_the_runs_own_settings(finished_run, tmp_path):
    new_dir = tmp_path / "continued"
    result = run_cli("bigbird_dna.train", f"ckpt_path={finished_run / 'checkpoints' / 'last.ckpt'}",
                     f"hydra.run.dir={new_dir}", "trainer.max_steps=3", "trainer.val_check_interval=3", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    original = yaml.safe_load((finished_run / "config.yaml").read_text())
    resumed = yaml.safe_load((new_dir / "config.yaml").read_text())
    for group in ("data", "tokenizer", "model", "seed"):
        assert resumed[group] == original[group], group
    assert resumed["data"]["fasta"] == str(LAMBDA) and resumed["data"]["window_bp"] == 900
    assert resumed["trainer"]["max_steps"] == 3


def test_a_resume_with_nothing_left_to_train_is_refused(finished_run):
    before = snapshot(finished_run)
    result = run_cli("bigbird_dna.train", "ckpt_path=last", f"hydra.run.dir={finished_run}", timeout=300)
    assert_refused(result, before, finished_run, "is at step 2", "trainer.max_steps=2",
                   "give trainer.max_steps above 2")


def test_a_resume_in_place_keeps_the_original_record(finished_run):
    before = snapshot(finished_run)
    result = run_cli("bigbird_dna.train", "ckpt_path=last", f"hydra.run.dir={finished_run}",
                     "trainer.max_steps=3", "trainer.val_check_interval=3", timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (finished_run / "config.yaml").read_bytes() and \
        snapshot(finished_run)["config.yaml"] == before["config.yaml"]
    assert (finished_run / "config.resume-1.yaml").is_file()


def test_a_resume_keeps_the_runs_shape_unless_the_command_line_changes_it(tmp_path):
    """Gradient accumulation (like devices or precision) is how a step is computed: the printed
    resume command gives none of them, so the resumed run must take them from the run."""
    run_dir = tmp_path / "accumulating"
    first = run_cli("bigbird_dna.train", *COMMON, "trainer.accumulate_grad_batches=2", f"hydra.run.dir={run_dir}",
                    timeout=300)
    assert first.returncode == 0, first.stderr[-3000:]
    kept = run_cli("bigbird_dna.train", "ckpt_path=last", f"hydra.run.dir={run_dir}", "trainer.max_steps=3",
                   "trainer.val_check_interval=3", timeout=300)
    assert kept.returncode == 0, kept.stderr[-3000:]
    assert yaml.safe_load((run_dir / "config.resume-1.yaml").read_text())["trainer"]["accumulate_grad_batches"] == 2
    assert "every setting taken from" in kept.stdout + kept.stderr
    assert "overridden by this command: trainer.max_steps=3 (was 2)" in kept.stdout + kept.stderr
    changed = run_cli("bigbird_dna.train", "ckpt_path=last", f"hydra.run.dir={run_dir}", "trainer.max_steps=4",
                      "trainer.val_check_interval=4", "trainer.accumulate_grad_batches=1", timeout=300)
    assert changed.returncode == 0, changed.stderr[-3000:]
    assert yaml.safe_load((run_dir / "config.resume-2.yaml").read_text())["trainer"]["accumulate_grad_batches"] == 1
