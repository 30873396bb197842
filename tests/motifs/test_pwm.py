"""PWM helpers: an instance drawn from a PFM follows its column probabilities; log-odds scores of
every site on both strands agree with a direct computation."""

from __future__ import annotations

import numpy as np

from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.motifs.pwm import log_odds, max_log_odds, one_hot, sample_instance, site_scores

PFM = np.array([[0.7, 0.1, 0.1, 0.1], [0.0, 0.0, 1.0, 0.0], [0.25, 0.25, 0.25, 0.25], [0.1, 0.2, 0.3, 0.4]])


def test_sampled_instances_follow_the_column_probabilities():
    rng = np.random.default_rng(0)
    draws = np.stack([one_hot(sample_instance(PFM, rng)).T for _ in range(4000)])  # [n, L, 4]
    np.testing.assert_allclose(draws.mean(axis=0), PFM, atol=0.03)
    assert (draws[:, 1, 2] == 1).all()  # a probability of 1 always, a probability of 0 never


def test_one_hot_is_acgt_rows_and_n_is_a_zero_column():
    np.testing.assert_array_equal(one_hot("ACGTN"), np.eye(5, 4, dtype=np.float32).T)


def test_site_scores_match_a_direct_sum_on_both_strands():
    seq = "TTAGCTNAGGCATGCA"
    weights = log_odds(PFM)
    scores = site_scores(seq, PFM)
    assert scores.shape == (len(seq) - 3, 2)
    for i in range(len(seq) - 3):
        forward, reverse = seq[i:i + 4], reverse_complement(seq[i:i + 4])
        for column, site in ((0, forward), (1, reverse)):
            direct = sum(weights[k, "ACGT".index(b)] if b in "ACGT" else weights[k].min() for k, b in enumerate(site))
            assert np.isclose(scores[i, column], direct), (i, column)
    assert max_log_odds(seq, PFM) == scores.max()
    assert max_log_odds("AC", PFM) == float("-inf")
