"""The README's main command: ``python -m bigbird_dna.train`` with no overrides, on the bundled
sample genome. It must finish, beat a context-free (unigram) predictor on validation, and leave a
checkpoint and an export. (About 4 minutes on 2 CPU cores; its speed is reported, not asserted.)"""

from __future__ import annotations

import json

import pytest

from bigbird_dna.model.export import load_export
from tests.conftest import run_cli


@pytest.mark.slow
def test_default_command_on_the_sample_genome_beats_the_unigram_entropy(tmp_path):
    run_dir = tmp_path / "demo"
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", cwd=tmp_path, timeout=1200,
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MLM pretraining finished" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    print(f"default demo: {summary['seconds']} s, val loss {summary['val/loss']:.4f}, "
          f"unigram entropy {summary['val_unigram_entropy']:.4f}, {summary['val/bits_per_base']:.4f} bits/base")
    assert summary["global_step"] == 400
    assert summary["val/loss"] < summary["val_unigram_entropy"]
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert load_export(run_dir / "export", task="mlm").state_dict
