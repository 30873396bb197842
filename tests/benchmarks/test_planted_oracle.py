"""The planted-presence oracle ranks planted windows above unplanted ones, on either strand, and
knows nothing without the planted matrix."""
import numpy as np
from sklearn.metrics import roc_auc_score

from benchmarks.planted_oracle import CODE, background_log_probs, log_ratio


def _set(rng, pfm, n=200, length=120):
    seqs, labels = [], []
    for i in range(n):
        x = rng.integers(0, 4, length)
        if i % 2:
            site = np.array([rng.choice(4, p=row) for row in pfm])
            site = 3 - site[::-1] if rng.random() < 0.5 else site  # the reverse strand half the time
            at = rng.integers(0, length - len(pfm))
            x[at:at + len(pfm)] = site
        seqs.append(x)
        labels.append(i % 2)
    return seqs, np.array(labels)


def test_the_oracle_finds_the_planted_matrix_and_a_wrong_matrix_finds_nothing():
    rng = np.random.default_rng(0)
    pfm = np.full((10, 4), 0.02)
    pfm[np.arange(10), rng.integers(0, 4, 10)] = 0.94
    seqs, labels = _set(rng, pfm)
    background = background_log_probs([x for x, y in zip(seqs, labels) if y == 0], 2)
    right = [log_ratio(x, np.log(pfm), background, 2) for x in seqs]
    wrong = np.full((10, 4), 0.02)  # another motif, drawn independently
    wrong[np.arange(10), np.random.default_rng(1).integers(0, 4, 10)] = 0.94
    assert roc_auc_score(labels, right) > 0.95
    assert abs(roc_auc_score(labels, [log_ratio(x, np.log(wrong), background, 2) for x in seqs]) - 0.5) < 0.15
    assert CODE[ord("G")] == 2 and CODE[ord("N")] == 4
