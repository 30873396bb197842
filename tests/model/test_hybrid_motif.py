"""The hybrid encoder's stem finds a planted 10-bp motif (85% per-base consensus) in 200-bp windows
of the bundled genome within a short CPU training: the test issue 31 set for it.
``benchmarks/planted_motif.py`` compares it with the tiny encoder at its full size."""

from __future__ import annotations

from benchmarks.planted_motif import train_classifier
from bigbird_dna.demo.planted_motif import planted_windows
from bigbird_dna.model.config import EncoderConfig
from tests.conftest import REPO

GENOME = REPO / "sample_data" / "h_pylori_F32.fa"
STEPS = 100  # batches of 32: 0.928 on the developers' shared 2-core CPU, in 46 s of training
# One layer, 64 wide, behind a 32-channel stem of 15-bp convolutions pooling 4 bases per token:
# a 200-bp window is 52 BigBird tokens.
SMALL_HYBRID = {"vocab_size": 20, "hidden_size": 64, "num_layers": 1, "num_heads": 2, "intermediate_size": 128,
                "max_positions": 64, "dropout": 0.1, "conv_kernel": 9, "attention": {"block_size": 16},
                "stem": {"kernel": 15, "channels": 32, "blocks": 1, "pool": 4}}


def test_a_small_hybrid_finds_a_planted_motif_in_a_short_cpu_training():
    train = planted_windows(GENOME, 2000, seed=0)
    val = planted_windows(GENOME, 300, seed=1)
    result = train_classifier(EncoderConfig.from_dict(SMALL_HYBRID), train, val, seconds=float("inf"),
                              max_steps=STEPS, eval_every=STEPS)
    print(f"planted motif: val AUROC {result['final_val_auroc']} after {result['steps']} steps, "
          f"{result['train_seconds']} s")
    assert result["final_val_auroc"] >= 0.9, result
