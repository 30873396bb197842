"""The small CNN baseline: learns a motif planted at random positions, early-stops when the
validation loss rises, handles variable lengths and both strands, and is seeded."""

from __future__ import annotations

import numpy as np
import torch

from bigbird_dna.evaluation.baselines.cnn import SmallCNN, one_hot, predict_cnn, train_cnn
from bigbird_dna.evaluation.baselines.sequences import CodedSet, encode_strings, reverse_complement_codes
from bigbird_dna.evaluation.metrics import classification_metrics
from tests.baselines.planted import splits

CPU = torch.device("cpu")


def coded(dataset) -> CodedSet:
    return CodedSet(*encode_strings(dataset.seqs), dataset.labels)


def test_learns_a_motif_planted_at_random_positions():
    data = {split: coded(d) for split, d in splits(600, 80, seed=0).items()}
    result = train_cnn(data["train"], data["val"], "binary", CPU, seed=0, max_epochs=5, lr=3e-3)
    probs = predict_cnn(result.model, data["test"], "binary", CPU)
    assert probs.shape == (len(data["test"]), 1)
    assert classification_metrics(probs, torch.from_numpy(data["test"].labels), "binary")["auroc"] > 0.9
    assert result.best_val_loss == min(result.val_losses)


def test_early_stops_when_the_validation_loss_rises():
    rng = np.random.default_rng(0)
    data = {split: coded(d) for split, d in splits(300, 60, seed=1).items()}
    for d in data.values():
        d.labels = rng.permutation(d.labels)  # nothing to learn: val loss only rises
    result = train_cnn(data["train"], data["val"], "binary", CPU, seed=0, max_epochs=30)
    assert result.stopped == "early_stopping" and result.epochs < 30
    assert result.epochs - result.best_epoch == 3  # patience 3, best weights kept
    late = train_cnn(data["train"], data["val"], "binary", CPU, seed=0, max_epochs=30, max_seconds=0.0)
    assert late.stopped == "time_limit" and late.epochs == 1


def test_variable_lengths_both_strands_and_seeds():
    seqs = ["ACGTACGTAC", "TTGACGTCAAGGN", "ACG"]
    codes, lengths = encode_strings(seqs)
    x = one_hot(codes, CPU)
    assert x.shape == (3, 4, 13) and x[2, :, 3:].abs().sum() == 0 and x[1, :, 12].abs().sum() == 0  # pads, N
    data = CodedSet(codes, lengths, np.array([[1], [0], [1]], dtype=np.float32))
    torch.manual_seed(0)
    model = SmallCNN(1).eval()
    rc = CodedSet(reverse_complement_codes(codes, lengths), lengths, data.labels)
    # averaged over both strands, a sequence and its reverse complement score the same
    torch.testing.assert_close(predict_cnn(model, data, "binary", CPU), predict_cnn(model, rc, "binary", CPU))
    state = torch.random.get_rng_state()
    runs = [train_cnn(data, data, "binary", CPU, seed=7, max_epochs=2) for _ in range(2)]
    assert torch.equal(state, torch.random.get_rng_state())  # the global RNG is left alone
    for a, b in zip(runs[0].model.state_dict().values(), runs[1].model.state_dict().values()):
        torch.testing.assert_close(a, b)


def test_multiclass_outputs_are_distributions():
    data = {split: coded(d) for split, d in splits(200, 60, seed=2, motifs=("TGACGTCA", "GGGCCCAA")).items()}
    result = train_cnn(data["train"], data["val"], "multiclass", CPU, seed=0, max_epochs=2)
    probs = predict_cnn(result.model, data["test"], "multiclass", CPU)
    assert probs.shape == (len(data["test"]), 3)
    torch.testing.assert_close(probs.sum(1), torch.ones(len(probs)))


def test_given_strand_mode_reads_orientation():
    """``both_strands=False`` (oriented data): the sequence is scored as given, so a sequence and its
    reverse complement may differ, and a motif that only counts on one strand is learnt as such."""
    seqs = ["ACGTACGTAC", "TTGACGTCAAGGN", "ACG"]
    codes, lengths = encode_strings(seqs)
    data = CodedSet(codes, lengths, np.array([[1], [0], [1]], dtype=np.float32))
    rc = CodedSet(reverse_complement_codes(codes, lengths), lengths, data.labels)
    torch.manual_seed(0)
    model = SmallCNN(1).eval()
    forward = predict_cnn(model, data, "binary", CPU, both_strands=False)
    torch.testing.assert_close(forward, torch.sigmoid(model(one_hot(codes, CPU))))
    assert not torch.allclose(forward, predict_cnn(model, rc, "binary", CPU, both_strands=False))

    rng = np.random.default_rng(0)
    background = lambda: "".join(rng.choice(list("ACGT"), 60))  # noqa: E731
    motif, rc_motif = "GGTAAGTA", "TACTTACC"  # positives carry it as given, negatives its reverse complement

    def planted(count: int) -> CodedSet:
        rows = []
        for i in range(count):
            seq = background()
            at = int(rng.integers(0, 52))
            rows.append((seq[:at] + (motif if i % 2 == 0 else rc_motif) + seq[at + 8:], float(i % 2 == 0)))
        return CodedSet(*encode_strings([s for s, _ in rows]), np.array([[y] for _, y in rows], dtype=np.float32))

    train, val, test = planted(400), planted(100), planted(200)
    labels = torch.from_numpy(test.labels)
    aurocs = {}
    for both in (True, False):
        result = train_cnn(train, val, "binary", CPU, seed=0, max_epochs=8, lr=3e-3, both_strands=both)
        probs = predict_cnn(result.model, test, "binary", CPU, both_strands=both)
        aurocs[both] = classification_metrics(probs, labels, "binary")["auroc"]
    assert aurocs[False] > 0.9 and aurocs[True] < 0.7, aurocs  # both strands cannot tell a motif from its RC
