"""The README's main command: ``python -m bigbird_dna.train`` with no overrides, on the bundled
sample genome. It must finish, learn from context (honest bits/base at [MASK] inputs at least
0.05 below the train-unigram baseline on the same bases), report the k-mer baselines, and leave a
checkpoint and an export. (A few minutes on 2 CPU cores; its speed is reported, not asserted.)"""

from __future__ import annotations

import json

import pytest

from bigbird_dna.model.export import load_export
from tests.conftest import run_cli


@pytest.mark.slow
def test_default_command_on_the_sample_genome_learns_from_context(tmp_path):
    run_dir = tmp_path / "demo"
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", cwd=tmp_path, timeout=1200,
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MLM pretraining finished" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    model, unigram = summary["val/bits_per_base"], summary["val/baseline/unigram_bits_per_base"]
    print(f"default demo: {summary['seconds']} s, val {model:.4f} bits/base at [MASK], train unigram {unigram:.4f}, "
          f"causal k-mer {summary['val/baseline/markov_causal_bits_per_base']:.4f}")
    assert model <= unigram - 0.05
    assert "vs train unigram" in result.stdout and "vs causal k-mer" in result.stdout
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert load_export(run_dir / "export", task="mlm").state_dict
