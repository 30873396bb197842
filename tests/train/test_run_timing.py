"""A run says what it is doing and how long each part took: phase lines in the log, step lines
however few the steps, and a summary whose ``seconds`` cover the whole run, baselines included."""

from __future__ import annotations

import gzip
import json
import logging
import time

import pytest

from bigbird_dna.evaluation import mlm_baselines as mlm_module
from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli

PHASES = ("decompress", "index", "splits", "tiling", "tokenizer", "fit", "validate", "test", "baselines")


@pytest.fixture
def gzipped_lambda(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    target = tmp_path / "lambda.fa.gz"
    target.write_bytes(gzip.compress(LAMBDA.read_bytes()))
    return target


def test_summary_seconds_cover_every_phase_including_the_baselines_after_fit(
        gzipped_lambda, train_in_process, monkeypatch, caplog, capsys):
    real_fit = mlm_module.select_and_fit

    def slow_fit(*args, **kwargs):  # makes the k-mer baselines, which run after fit, take 2 s or more
        time.sleep(1.0)
        return real_fit(*args, **kwargs)

    monkeypatch.setattr(mlm_module, "select_and_fit", slow_fit)
    before = time.monotonic()
    with caplog.at_level(logging.INFO, logger="bigbird_dna"):
        summary, run_dir = train_in_process(f"data.fasta={gzipped_lambda}", "trainer.max_steps=3")
    elapsed = time.monotonic() - before

    assert json.loads((run_dir / "summary.json").read_text()) == summary
    phases = summary["phases"]
    assert set(PHASES) <= set(phases), sorted(phases)
    assert phases["baselines"] >= 2.0
    assert summary["seconds"] >= sum(phases.values()) - 0.01 * len(phases)
    assert summary["seconds"] >= elapsed - 0.5, "the summary's time must include the baselines and the export"
    for name in set(PHASES) - {"tokenizer"}:  # a tokenizer settled in under a second is logged at DEBUG
        assert f"{name}: " in caplog.text, name
    assert "baselines: unigram and k-mer chains" in caplog.text

    steps = [line.split()[1] for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert steps == ["1/3", "2/3", "3/3"]


def test_the_cli_writes_phase_lines_to_train_log_and_times_from_process_start(gzipped_lambda, tmp_path):
    run_dir = tmp_path / "run"
    launched = time.time()
    result = run_cli("bigbird_dna.train", f"data.fasta={gzipped_lambda}", f"hydra.run.dir={run_dir}",
                     *FAST_OVERRIDES, "trainer.max_steps=2", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    wall = time.time() - launched
    assert result.returncode == 0, result.stderr[-3000:]
    log_text = (run_dir / "train.log").read_text()
    assert f"decompressing {gzipped_lambda}" in log_text and "decompress: wrote" in log_text
    assert "baselines: " in log_text and "fit: to step 2" in log_text
    summary_file = run_dir / "summary.json"
    summary = json.loads(summary_file.read_text())
    # Python's start-up and imports count too: more than the phases, and no more than the command's wall time.
    assert sum(summary["phases"].values()) < summary["seconds"] <= wall
    # From the launch to the summary's writing is the whole run as timed from the process start, up to the
    # fork (well under a second) and /proc's 10 ms ticks; what the process does after writing it (interpreter
    # shut-down, which a loaded machine stretches) is not part of either. A clock started in main(), after
    # the imports, would fall short by the imports' seconds.
    until_written = summary_file.stat().st_mtime - launched
    assert until_written - 1.0 <= summary["seconds"] <= until_written + 0.05, (summary["seconds"], until_written)
    assert "step 1/2" in result.stdout and "step 2/2" in result.stdout
