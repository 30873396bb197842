"""A training run's output is its own: none of Lightning's start-up noise, and train.log ends with
the same summary block as the terminal."""

from __future__ import annotations

from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli

NOISE = ("💡 Tip", "LeafSpec", "IterableDataset` has `__len__`", "The `srun` command", "could not find the monitored")


def test_a_run_prints_no_startup_noise_and_logs_its_summary(tmp_path):
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", *FAST_OVERRIDES, f"data.fasta={LAMBDA}", "trainer.max_steps=2",
                     f"hydra.run.dir={run_dir}", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    assert [noise for noise in NOISE if noise in output] == []
    log = (run_dir / "train.log").read_text()
    assert "MLM pretraining finished" in log and "vs causal k-mer" in log
