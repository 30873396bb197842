"""``BigBirdDNA.score`` against known log-probabilities: an oracle MLM that returns a Markov chain's
exact masked marginal at the [MASK] (so masking, batching, offsets and the token-to-base mapping are
all that is tested), k-mer tokens sharing their log p, spans, strands and refusals.

Tolerance: 1e-5 nats per base (float32 log-softmax of exact float64 values)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.demo.markov_genome import MarkovSource
from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import reverse_complement
from tests.likelihood.conftest import constant_oracle, markov_masked_log_probs, markov_oracle

TOLERANCE = 1e-5


def _true(source: MarkovSource, seq: str) -> np.ndarray:
    """``[L]``: the chain's log p of each base of ``seq`` given all the others."""
    upper = seq.upper()
    return markov_masked_log_probs(source, upper)[np.arange(len(seq)), ["ACGT".index(c) for c in upper]]


@pytest.mark.parametrize("order", [1, 2])
def test_the_markov_reference_matches_brute_force_enumeration(order):
    """The Bayes formula of the reference equals conditionals from the full joint over all 4**6 sequences."""
    source = MarkovSource.peaky(order, alpha=0.5, seed=order)
    length = 6
    joint = {}
    for codes in itertools.product(range(4), repeat=length):
        p = 4.0 ** -order
        for j in range(order, length):
            context = sum(codes[j - order + i] * 4 ** (order - 1 - i) for i in range(order))
            p *= source.transitions[context, codes[j]]
        joint["".join("ACGT"[c] for c in codes)] = p
    for seq in ("ACGTTA", "GGGCAT", "TATACC"):
        reference = np.exp(markov_masked_log_probs(source, seq))
        for t in range(length):
            column = np.array([joint[seq[:t] + b + seq[t + 1:]] for b in "ACGT"])
            np.testing.assert_allclose(reference[t], column / column.sum(), rtol=1e-9)


def test_score_returns_the_exact_masked_marginals_of_a_markov_source(char_export):
    """Sequences of several lengths (one lower-case) in one call, odd batch size: every base's score is
    the chain's true ``log p(x_t | rest)`` within 1e-5, and sums/means are its sum/mean."""
    source = MarkovSource.peaky(order=2, alpha=0.3, seed=3)
    seqs = [source.sample(n, seed=n) for n in (37, 64, 120)] + [source.sample(64, seed=9).lower()]
    model = markov_oracle(BigBirdDNA.from_pretrained(char_export, device="cpu"), source)
    scores = model.score(seqs, batch_size=7)
    for seq, got in zip(seqs, scores.per_base):
        assert got.dtype == torch.float32 and got.shape == (len(seq),)
        np.testing.assert_allclose(got.numpy(), _true(source, seq), atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(scores.sums.numpy(), [_true(source, s).sum() for s in seqs], atol=1e-3, rtol=0)
    np.testing.assert_allclose(scores.means.numpy(), [_true(source, s).mean() for s in seqs], atol=TOLERANCE, rtol=0)


def test_both_strands_average_the_reverse_complements_mirrored_scores(char_export):
    source = MarkovSource.peaky(order=2, alpha=0.3, seed=4)
    seq = source.sample(50, seed=1)
    model = markov_oracle(BigBirdDNA.from_pretrained(char_export, device="cpu"), source)
    got = model.score(seq, strands="both", batch_size=16).per_base[0]
    expected = (_true(source, seq) + _true(source, reverse_complement(seq))[::-1]) / 2
    assert np.abs(_true(source, seq) - expected).max() > 0.1  # the two strands do differ here
    np.testing.assert_allclose(got.numpy(), expected, atol=TOLERANCE, rtol=0)


@pytest.fixture
def kmer_model(tmp_path):
    """A 3-mer model whose logits are the same fixed vector at every position."""
    from bigbird_dna.tokenizer import kmer_tokenizer
    from tests.promoter.conftest import make_export

    tokenizer = kmer_tokenizer(3)
    logits = torch.randn(tokenizer.vocab_size, generator=torch.Generator().manual_seed(0))
    model = BigBirdDNA.from_pretrained(make_export(tmp_path / "kmer", "mlm", tokenizer), device="cpu")
    return constant_oracle(model, logits), logits.log_softmax(-1)


def test_a_kmer_token_shares_its_log_p_among_its_bases_and_n_bases_are_nan(kmer_model):
    """``ACGTACGTNAC`` reads as ACG|TAC|G|T|N|A|C: one pass (one [MASK]) per scorable token."""
    model, logp = kmer_model
    vocab = model.tokenizer.backend.get_vocab()
    tokens = [("ACG", 0), ("TAC", 3), ("G", 6), ("T", 7), ("N", 8), ("A", 9), ("C", 10)]
    expected = np.full(11, np.nan)
    for token, start in tokens:
        if token != "N":
            expected[start:start + len(token)] = logp[vocab[token]].item() / len(token)
    scores = model.score("ACGTACGTNAC", batch_size=4)
    np.testing.assert_allclose(scores.per_base[0].numpy(), expected, atol=TOLERANCE, rtol=0)
    assert model.module.encoder.masks_per_row == [1] * 6  # 6 passes: every token but N, alone
    total = sum(logp[vocab[t]].item() for t, _ in tokens if t != "N")
    assert abs(scores.sums.item() - total) < TOLERANCE and abs(scores.means.item() - total / 10) < TOLERANCE


def test_a_span_masks_its_overlapping_tokens_together_and_scores_only_their_bases(kmer_model):
    model, logp = kmer_model
    vocab = model.tokenizer.backend.get_vocab()
    scores = model.score(["ACGTACGTNAC", "ACGTACGTNAC", "ACGTACGTNAC"], spans=[(4, 5), (2, 4), (8, 9)])
    assert model.module.encoder.masks_per_row == [1, 2]  # the all-N span has nothing to score: no pass
    inside, across, n_only = scores.per_base
    assert torch.isnan(inside[[*range(3), *range(6, 11)]]).all()
    np.testing.assert_allclose(inside[3:6].numpy(), logp[vocab["TAC"]].item() / 3, atol=TOLERANCE)
    assert torch.isfinite(across[:6]).all() and torch.isnan(across[6:]).all()
    assert abs(scores.sums[1].item() - (logp[vocab["ACG"]] + logp[vocab["TAC"]]).item()) < TOLERANCE
    assert torch.isnan(n_only).all() and scores.sums[2].item() == 0.0 and torch.isnan(scores.means[2])


def test_scores_do_not_depend_on_batch_size_or_on_longer_batch_mates(char_export):
    """A real (untrained) encoder: rows are never padded, so a sequence scores the same alone or with others."""
    model = BigBirdDNA.from_pretrained(char_export, device="cpu")
    rng = np.random.default_rng(0)
    short, long = ("".join(rng.choice(list("ACGT"), n)) for n in (40, 230))
    alone = model.score(short, batch_size=1).per_base[0]
    mixed = model.score([long, short, long], batch_size=64).per_base[1]
    assert torch.isfinite(alone).all() and alone.std() > 0
    torch.testing.assert_close(mixed, alone, atol=TOLERANCE, rtol=0)


def test_score_refuses_a_classifier_bad_arguments_and_a_sequence_past_the_context(char_export, tmp_path):
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.promoter.conftest import make_export

    classifier = BigBirdDNA.from_pretrained(make_export(tmp_path / "p", "promoter", char_tokenizer()), device="cpu")
    with pytest.raises(InputError, match="'promoter' model: score\\(\\) needs the masked-LM head"):
        classifier.score("ACGT")
    model = BigBirdDNA.from_pretrained(char_export, device="cpu")
    with pytest.raises(InputError, match="strands='-'"):
        model.score("ACGT", strands="-")
    with pytest.raises(InputError, match="2 spans for 1 sequences"):
        model.score("ACGT", spans=[(0, 1), (1, 2)])
    with pytest.raises(InputError, match=r"bad at \[0\]"):
        model.score("ACGT", spans=[(3, 9)])
    with pytest.raises(InputError, match="cut it into windows of 254 bp or less"):
        model.score("A" * 300)
