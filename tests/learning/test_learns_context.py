"""Learnability: pretraining on a source of known entropy rate must learn from context.

An order-``k`` Markov chain with peaky transitions (every context puts 0.85/0.1/0.04/0.01 on the
four bases, in its own order) has an entropy rate of about 0.78 bits/base, while its unigram costs
about 1.9. After a small, fixed step budget the honest masked cross-entropy (at [MASK] inputs only)
must close at least half of that gap. A model that ignores context stays at the unigram: the
encoder with learned absolute positions did, for hundreds of steps (issue 12).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.conftest import compose

PROBS = np.array([0.85, 0.1, 0.04, 0.01])
ORDER = 2


def markov_fasta(path, length: int = 200_000, order: int = ORDER, seed: int = 0) -> float:
    """Write one record of an order-``order`` Markov chain to ``path``; returns its entropy rate (bits/base)."""
    rng = np.random.default_rng(seed)
    table = np.stack([rng.permutation(PROBS) for _ in range(4 ** order)]).cumsum(1)
    draws = rng.random(length)
    out = np.empty(length, dtype=np.int64)
    ctx = 0
    for i in range(length):
        out[i] = min(int(np.searchsorted(table[ctx], draws[i])), 3)
        ctx = (ctx * 4 + out[i]) % 4 ** order
    seq = "".join(np.array(list("ACGT"))[out])
    path.write_text(">markov\n" + "\n".join(seq[i:i + 80] for i in range(0, length, 80)) + "\n")
    return float(-(PROBS * np.log2(PROBS)).sum())


RECIPE = [
    "model.hidden_size=64", "model.num_heads=4", "model.intermediate_size=128", "model.num_layers=1",
    "model.max_positions=128", "model.dropout=0.0", "model.attention.block_size=8",
    "data.window_bp=126", "data.batch_size=16", "data.num_workers=0", "data.reverse_complement_prob=0.0",
    "data.windows_per_epoch=4096", "data.baseline_max_order=4", "optim.lr=3e-3", "optim.warmup_steps=0.1",
    "trainer.val_check_interval=1000", "trainer.log_every_n_steps=50", "trainer.enable_model_summary=false",
    "callbacks.preemption=null",
]


@pytest.mark.parametrize("tokenizer, steps", [("char", 150)])
def test_masked_cross_entropy_closes_half_the_gap_to_the_entropy_rate(tmp_path, monkeypatch, tokenizer, steps):
    from bigbird_dna.train import run

    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    rate = markov_fasta(tmp_path / "markov.fa")
    extra = ["tokenizer=char"] if tokenizer == "char" else ["tokenizer.vocab_size=64", "tokenizer.sample_bp=200000",
                                                               "data.window_bp=380"]  # ~126 BPE tokens
    cfg = compose([*RECIPE, *extra, f"data.fasta={tmp_path / 'markov.fa'}", f"trainer.max_steps={steps}"],
                  tmp_path / "run")
    summary = run(cfg)
    model, unigram = summary["val/bits_per_base"], summary["val/baseline/unigram_bits_per_base"]
    causal = summary["val/baseline/markov_causal_bits_per_base"]
    print(f"{tokenizer}: {model:.3f} bits/base at [MASK]; train unigram {unigram:.3f}, causal k-mer {causal:.3f}, "
          f"source {rate:.3f}; {summary['seconds']} s")
    assert math.isfinite(model)
    assert causal < rate + 0.15  # the k-mer baseline (both strands, 126-bp windows) nearly finds the source
    assert model <= unigram - 0.5 * (unigram - rate), "MLM did not learn from context"
