"""The fitted composition path is cross-fitted: in training each sequence gets the logits of an LR
fitted without its fold, so the network trains on composition logits as optimistic as a held-out
sequence's; evaluation uses the full fit, and checkpoints from before cross-fitting still load."""

from __future__ import annotations

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from bigbird_dna.data.labelled import LabelledDataModule
from bigbird_dna.evaluation.baselines.kmer_lr import fit_kmer_lr
from bigbird_dna.evaluation.baselines.kmers import kmer_frequencies as lr_frequencies
from bigbird_dna.evaluation.baselines.sequences import encode_strings, reverse_complement_codes
from bigbird_dna.model.composition import CROSS_FIT_FOLDS, FittedKmerComposition, sequence_folds
from bigbird_dna.tasks.composition_fit import code_folds, fit_composition_path, out_of_fold_fits
from tests.baselines.planted import _revcomp, planted_set, random_dna, splits
from tests.model.test_composition_fit import ids_of


def test_folds_follow_the_sequence_not_its_strand_padding_batch_or_copies():
    rng = np.random.default_rng(0)
    seqs = [random_dna(rng, int(rng.integers(40, 120))) for _ in range(2000)]
    folds = sequence_folds(ids_of(seqs))
    assert folds.dtype == torch.int64 and set(folds.tolist()) == set(range(CROSS_FIT_FOLDS))
    shares = torch.bincount(folds, minlength=CROSS_FIT_FOLDS) / len(seqs)
    assert shares.min() > 0.15 and shares.max() < 0.25, shares  # about a fifth each
    torch.testing.assert_close(sequence_folds(ids_of([_revcomp(s) for s in seqs])), folds, atol=0, rtol=0)
    torch.testing.assert_close(sequence_folds(ids_of(seqs[:7] + ["A" * 400])[:7]), folds[:7], atol=0, rtol=0)
    assert sequence_folds(ids_of([seqs[3]] * 3)).tolist() == [int(folds[3])] * 3
    codes, lengths = encode_strings(seqs)  # the fit's side: coded rows, and their reverse complements
    np.testing.assert_array_equal(code_folds(codes), folds.numpy())
    np.testing.assert_array_equal(code_folds(reverse_complement_codes(codes, lengths)), folds.numpy())


def test_training_reads_out_of_fold_logits_and_evaluation_the_full_fit():
    # labels no k-mer predicts, and a penalty weak enough for 340 features to memorise 120 rows
    data = splits(120, 100, seed=4)
    data["train"].labels[:] = np.random.default_rng(0).permutation(data["train"].labels)
    codes = encode_strings(data["train"].seqs)[0]
    x = lr_frequencies(codes, 4, oriented=True)
    model = fit_kmer_lr(x, data["train"].labels, x, data["train"].labels, "binary", max_k=4, l2_grid=(1e-4,),
                        oriented=True)
    path = FittedKmerComposition(4, 1)
    path.load_fit(model.standardiser.mean, model.standardiser.std, model.weight, model.bias,
                  *out_of_fold_fits(model, x, data["train"].labels, code_folds(codes)))
    ids, labels = ids_of(data["train"].seqs), data["train"].labels
    with torch.no_grad():
        in_sample, out_of_fold = path.eval()(ids)[:, 0], path.train()(ids)[:, 0]
    assert roc_auc_score(labels, in_sample) > 0.95  # the full fit has memorised its own rows
    assert abs(roc_auc_score(labels, out_of_fold) - 0.5) < 0.1  # a row's own fold's LR never saw it


def test_each_out_of_fold_fit_never_saw_its_fold():
    data = splits(500, 100, seed=3)
    codes = {s: encode_strings(d.seqs)[0] for s, d in data.items()}
    x = {s: lr_frequencies(c, 4, oriented=True) for s, c in codes.items()}
    model = fit_kmer_lr(x["train"], data["train"].labels, x["val"], data["val"].labels, "binary", max_k=4,
                        l2_grid=(0.1,), oriented=True)
    fold = code_folds(codes["train"])
    weights, _ = out_of_fold_fits(model, x["train"], data["train"].labels, fold)
    relabelled = data["train"].labels.copy()
    relabelled[fold == 0] = 1 - relabelled[fold == 0]  # fold 0's rows change, no other's
    again, _ = out_of_fold_fits(model, x["train"], relabelled, fold)
    torch.testing.assert_close(again[0], weights[0], atol=2e-3, rtol=1e-2)
    for other in range(1, CROSS_FIT_FOLDS):  # every other fold's LR trained on fold 0's rows
        assert (again[other] - weights[other]).abs().max() > 1e-2


def test_a_path_from_before_cross_fitting_loads_and_trains_on_its_full_fit():
    path, generator = FittedKmerComposition(3, 1), torch.Generator().manual_seed(0)
    fits = [torch.randn(84, 1, generator=generator) for _ in range(CROSS_FIT_FOLDS + 1)]
    path.load_fit(torch.rand(84, generator=generator), torch.rand(84, generator=generator) + 0.5, fits[0],
                  torch.zeros(1), fits[1:], [torch.zeros(1)] * CROSS_FIT_FOLDS)
    ids = ids_of(splits(40, 100, seed=3)["train"].seqs)
    with torch.no_grad():
        assert not torch.allclose(path.train()(ids), path.eval()(ids))  # out of fold in training
    old_state = {k: v for k, v in path.state_dict().items() if not k.startswith(("fold", "folds"))}
    assert set(old_state) == {"mean", "std", "weight", "bias", "fitted"}
    loaded = FittedKmerComposition(3, 1)
    loaded.load_state_dict(old_state)  # strict
    assert int(loaded.folds) == 0 and bool(loaded.fitted)
    with torch.no_grad():
        torch.testing.assert_close(loaded.train()(ids), path.eval()(ids), atol=0, rtol=0)


def test_a_small_set_chooses_and_judges_its_fit_by_cross_validation_on_train():
    data = splits(120, 100, seed=5)
    data["val"] = planted_set(10, 100, seed=6)  # 10 validation rows: no fit could pass their threshold
    path = FittedKmerComposition(3, 1)
    fit = fit_composition_path(path, LabelledDataModule(data, batch_size=8, num_workers=0, seed=0,
                                                        eval_reverse_complement=False))
    assert fit["chosen_on"] == "cross-validation" and fit["kept"] and fit["folds"] == CROSS_FIT_FOLDS
    assert fit["val_auroc"] > fit["kept_above"] > 0.5 and fit["rows"] == 120
    with torch.no_grad():  # the full fit on all 120 rows scores the test set as a k-mer LR does
        assert roc_auc_score(data["test"].labels, path.eval()(ids_of(data["test"].seqs))[:, 0]) > 0.7
    rng = np.random.default_rng(0)
    data["train"].labels[:] = rng.permutation(data["train"].labels)  # nothing to find
    noise = FittedKmerComposition(2, 1)
    fit = fit_composition_path(noise, LabelledDataModule(data, batch_size=8, num_workers=0, seed=0,
                                                         eval_reverse_complement=False))
    assert fit["chosen_on"] == "cross-validation" and not fit["kept"] and noise.weight.abs().sum() == 0
    tiny = {"train": planted_set(8, 100, seed=7), "val": planted_set(4, 100, seed=8)}
    assert "could not show" in fit_composition_path(FittedKmerComposition(2, 1), LabelledDataModule(
        tiny, batch_size=4, num_workers=0, seed=0))["skipped"]
