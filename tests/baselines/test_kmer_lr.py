"""The k-mer logistic regression: k-mer counting, learning a planted k-mer, chance on random
labels, agreement with scikit-learn, and the multi-class and multi-label shapes and metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigbird_dna.evaluation.baselines.kmer_lr import Standardiser, fit_kmer_lr, fit_linear
from bigbird_dna.evaluation.baselines.kmers import feature_slices, kmer_frequencies, num_features
from bigbird_dna.evaluation.baselines.sequences import encode_onehot_agct, encode_strings, reverse_complement_codes
from bigbird_dna.evaluation.metrics import classification_metrics
from tests.baselines.planted import MOTIF, planted_set, random_dna, splits


def features(dataset, max_k=6):
    codes, _ = encode_strings(dataset.seqs)
    return kmer_frequencies(codes, max_k)


def test_kmer_frequencies_are_strand_symmetric_and_broken_by_n():
    codes, lengths = encode_strings(["ACGTTGCA", "AANAA", "acgtNNNNNNNNNNNNNNNNNN"])
    assert codes.shape == (3, 22) and lengths.tolist() == [8, 5, 22]
    f = kmer_frequencies(codes, 6)
    assert f.shape == (3, num_features(6)) == (3, 2772)
    np.testing.assert_allclose(f, kmer_frequencies(reverse_complement_codes(codes, lengths), 6), atol=1e-7)
    two = f[:, feature_slices()[2]][:, 2:]  # the 10 canonical 2-mers
    np.testing.assert_allclose(two.sum(1), [1, 1, 1], rtol=1e-6)  # frequencies per k sum to one
    assert two[1].max() == 1.0  # AANAA: only AA (twice); no k-mer spans the N
    # DeepSEA's one-hot (A, G, C, T channels) gives the same codes as the letters
    onehot = np.zeros((1, 4, 5), dtype=np.uint8)
    for pos, channel in enumerate([0, 2, 1, 3]):  # A C G T
        onehot[0, channel, pos] = 1
    assert encode_onehot_agct(onehot).tolist() == [[0, 1, 2, 3, 4]]


def test_kmer_counting_is_vectorised():
    codes = np.random.default_rng(0).integers(0, 4, (5000, 1000)).astype(np.uint8)
    import time
    started = time.monotonic()
    kmer_frequencies(codes, 6)
    assert time.monotonic() - started < 5  # 50k sequences of 1 kbp take seconds


def test_learns_a_planted_kmer_and_scores_chance_on_random_labels():
    data = splits(800, 150, seed=0, copies=2)
    x = {split: features(d) for split, d in data.items()}
    model = fit_kmer_lr(x["train"], data["train"].labels, x["val"], data["val"].labels, "binary")
    probs = model.predict(x["test"])
    assert probs.shape == (len(data["test"]), 1)
    assert classification_metrics(probs, torch.from_numpy(data["test"].labels), "binary")["auroc"] > 0.95
    assert 1 <= model.k <= 6 and model.k_max_tried == 6

    rng = np.random.default_rng(1)
    shuffled = {split: rng.permutation(d.labels) for split, d in data.items()}
    chance = fit_kmer_lr(x["train"], shuffled["train"], x["val"], shuffled["val"], "binary")
    auroc = classification_metrics(chance.predict(x["test"]), torch.from_numpy(shuffled["test"]), "binary")["auroc"]
    assert 0.35 <= auroc <= 0.65


def test_agrees_with_scikit_learn():
    from sklearn.linear_model import LogisticRegression

    data = splits(600, 120, seed=3)
    columns = feature_slices()[3]
    x = {split: torch.from_numpy(features(d, 3)[:, columns]) for split, d in data.items()}
    scaler = Standardiser.fit(x["train"])
    x = {split: scaler(v) for split, v in x.items()}
    y = torch.from_numpy(data["train"].labels)
    l2 = 1e-2
    weight, bias = fit_linear(x["train"], y, "binary", l2)
    ours = classification_metrics((x["test"] @ weight + bias).sigmoid(), torch.from_numpy(data["test"].labels),
                                  "binary")["auroc"]
    # sklearn minimises C * sum(loss) + ||w||^2 / 2, ours mean(loss) + l2 / 2 * ||w||^2
    sk = LogisticRegression(C=1.0 / (l2 * len(y)), max_iter=5000, tol=1e-8).fit(x["train"].numpy(), y[:, 0].numpy())
    theirs = classification_metrics(torch.from_numpy(sk.predict_proba(x["test"].numpy())[:, 1:]),
                                    torch.from_numpy(data["test"].labels), "binary")["auroc"]
    assert ours > 0.6 and abs(ours - theirs) < 0.01
    np.testing.assert_allclose(weight[:, 0].numpy(), sk.coef_[0], atol=2e-2)


def test_multiclass_and_multilabel_shapes_and_metrics():
    motifs = (MOTIF, "GGGCCCAATT", "TATATAAA")
    data = splits(600, 120, seed=5, motifs=motifs, copies=2)
    x = {split: features(d, 4) for split, d in data.items()}
    model = fit_kmer_lr(x["train"], data["train"].labels, x["val"], data["val"].labels, "multiclass", max_k=4)
    probs = model.predict(x["test"])
    assert probs.shape == (len(data["test"]), 4)
    torch.testing.assert_close(probs.sum(1), torch.ones(len(probs)))
    metrics = classification_metrics(probs, torch.from_numpy(data["test"].labels), "multiclass")
    assert set(metrics) == {"auroc", "accuracy", "macro_f1", "mcc", *(f"auroc_class{i}" for i in range(4))}
    assert metrics["auroc"] > 0.8
    assert metrics["auroc"] == pytest.approx(np.mean([metrics[f"auroc_class{i}"] for i in range(4)]))

    # multi-label: label j = "motif j is present" (classes 1 and 2), plus a label that is always 0
    multi = {split: np.stack([d.labels[:, 1], d.labels[:, 2], np.zeros(len(d))], 1).astype(np.float32)
             for split, d in data.items()}
    model = fit_kmer_lr(x["train"], multi["train"], x["val"], multi["val"], "multilabel", max_k=4)
    probs = model.predict(x["test"])
    assert probs.shape == (len(data["test"]), 3) and (probs[:, 2] < 0.5).all()
    metrics = classification_metrics(probs, torch.from_numpy(multi["test"]), "multilabel")
    assert metrics["labels_scored"] == 2 and metrics["auroc"] > 0.8  # the constant label is not scored
    assert metrics["auroc_median"] == pytest.approx(metrics["auroc"])  # two labels: median = mean


def test_compute_budget_caps_k():
    data = planted_set(200, 100)
    x = features(data)
    model = fit_kmer_lr(x, data.labels, x, data.labels, "binary", max_macs=200 * 44)
    assert model.k_max_tried == 3 and model.k <= 3


def test_random_dna_helper():
    assert set(random_dna(np.random.default_rng(0), 100)) <= set("ACGT")
