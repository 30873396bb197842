"""Learnability: the README's default command must learn from context on a source of known entropy rate.

The source is an order-4 Markov chain whose transitions are drawn from Dirichlet(0.15)
(:mod:`bigbird_dna.demo.markov_genome`): about 0.80 bits/base, against about 1.99 for its unigram.
With the default settings and step budget (``python -m bigbird_dna.train data.fasta=...``), the
honest masked cross-entropy (at [MASK] inputs only) must close at least half the gap from the train
unigram to the source's rate. A model that ignores context stays at the unigram; the encoder
without local convolutions closed 12% of this gap in the same 400 steps.
"""

from __future__ import annotations

import math

import pytest

from bigbird_dna.demo.markov_genome import write_markov_fasta
from tests.conftest import compose


@pytest.mark.slow
def test_default_command_closes_half_the_gap_to_the_entropy_rate(tmp_path, monkeypatch):
    from bigbird_dna.train import run

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    source = write_markov_fasta(tmp_path / "markov.fa", 1_000_000, order=4, alpha=0.15, seed=0)
    rate = source.entropy_rate()
    cfg = compose([f"data.fasta={tmp_path / 'markov.fa'}", "trainer.enable_progress_bar=false",
                   "callbacks.preemption=null"], tmp_path / "run")
    assert cfg.trainer.max_steps == 400  # the default budget, not a longer one
    summary = run(cfg)
    model, unigram = summary["val/bits_per_base"], summary["val/baseline/unigram_bits_per_base"]
    print(f"default command: {model:.3f} bits/base at [MASK]; train unigram {unigram:.3f}, source {rate:.3f}, "
          f"gap closed {(unigram - model) / (unigram - rate):.0%}; {summary['seconds']} s")
    assert math.isfinite(model)
    assert 0.75 < rate < 0.85 and unigram > 1.95  # the source is the one described above
    assert model <= unigram - 0.5 * (unigram - rate), "the default command did not learn from context"
