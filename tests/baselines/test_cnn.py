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
