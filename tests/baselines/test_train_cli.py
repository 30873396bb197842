"""End to end: ``python -m bigbird_dna.train task=promoter`` reports the baselines in
``summary.json`` and in its closing lines."""

from __future__ import annotations

import json

from tests.baselines.planted import planted_set
from tests.conftest import run_cli


def _write_tsv(path, dataset):
    rows = ["sequence\tlabel", *(f"{s}\t{int(y[0])}" for s, y in zip(dataset.seqs, dataset.labels))]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_promoter_run_reports_the_baselines(tmp_path):
    train = _write_tsv(tmp_path / "train.tsv", planted_set(320, 200, seed=0))
    test = _write_tsv(tmp_path / "test.tsv", planted_set(100, 200, seed=1))
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", "task=promoter", "data=promoter_labelled", f"data.train={train}",
                     f"data.test={test}", "data.num_workers=0", "data.baselines.cnn_max_epochs=4", "tokenizer=char",
                     "model.hidden_size=32", "model.num_heads=2", "model.intermediate_size=64",
                     "model.max_positions=256", "model.attention.block_size=16", "trainer.max_steps=2",
                     "trainer.val_check_interval=2", f"hydra.run.dir={run_dir}",
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["baseline/split"] == "test" and summary["baseline/eval_samples"] == 100
    for key in ("baseline/kmer_lr/test_auroc", "baseline/kmer_lr/test_auprc", "baseline/kmer_lr/k",
                "baseline/kmer_lr/l2", "baseline/cnn/test_auroc", "baseline/cnn/epochs", "baseline/seconds"):
        assert key in summary, key
    assert summary["baseline/kmer_lr/test_auroc"] > 0.8  # the planted motif is learnable
    assert "vs k-mer LR (oriented k=1.." in result.stdout and "vs small CNN (3 conv, max pool)" in result.stdout
    assert "k-mer LR baseline:" in result.stderr + result.stdout  # the INFO line with its duration
