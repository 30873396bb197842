"""The numbers an evaluation reports, on hand-made inputs: the paired comparison, mean ± sd, the
stratified folds and validation rule, and which published results a dataset name gets."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.evaluate.report import published_rows
from bigbird_dna.evaluation import paired
from bigbird_dna.evaluation.folds import (
    check_class_counts,
    hold_out_validation,
    kfold_splits,
    min_per_class,
    stratified_folds,
    validation_size,
)
from bigbird_dna.evaluation.paired import mean_sd, paired_comparison
from bigbird_dna.evaluation.published import published_results

MODEL = [0.90, 0.80, 0.85, 0.95, 0.70]
BASELINE = [0.80, 0.75, 0.80, 0.90, 0.72]  # differences 0.10, 0.05, 0.05, 0.05, -0.02


def test_the_paired_comparison_of_a_hand_made_example():
    result = paired_comparison(MODEL, BASELINE)
    # mean 0.23 / 5; squared deviations .054^2 + 3 * .004^2 + .066^2 = .00732, / 4 -> variance .00183
    assert result["n"] == 5 and result["left_out"] == 0
    assert result["mean_difference"] == pytest.approx(0.046)
    assert result["sd_difference"] == pytest.approx(math.sqrt(0.00183))
    assert result["t"] == pytest.approx(0.046 / (math.sqrt(0.00183) / math.sqrt(5)))  # 2.4045
    assert result["p_t_test"] == pytest.approx(0.0740, abs=5e-4)  # t = 2.4045 on 4 degrees of freedom
    # Wilcoxon: |d| ranks 5, 3, 3, 3 (tied) positive and 1 negative; W- = 1 is reached by 2 of the 32
    # sign patterns (W- = 0 or 1), so the exact two-sided p is 2 * 2 / 32.
    assert result["p_wilcoxon"] == pytest.approx(0.125)
    assert result["p_note"] is None


def test_the_comparison_is_model_minus_baseline_and_leaves_out_undefined_folds():
    swapped = paired_comparison(BASELINE, MODEL)
    assert swapped["mean_difference"] == pytest.approx(-0.046) and swapped["t"] < 0
    with_nan = paired_comparison([*MODEL, math.nan], [*BASELINE, 0.5])
    assert with_nan["n"] == 5 and with_nan["left_out"] == 1
    assert with_nan["p_t_test"] == pytest.approx(paired_comparison(MODEL, BASELINE)["p_t_test"])


def test_without_scipy_there_is_no_p_value_and_the_report_says_why(monkeypatch):
    monkeypatch.setattr(paired, "_scipy_stats", lambda: None)
    result = paired_comparison(MODEL, BASELINE)
    assert result["t"] == pytest.approx(2.4045, abs=1e-4)
    assert result["p_t_test"] is None and result["p_wilcoxon"] is None and "scipy" in result["p_note"]


def test_identical_differences_have_no_p_value():
    result = paired_comparison([0.6, 0.7, 0.8], [0.5, 0.6, 0.7])
    assert result["mean_difference"] == pytest.approx(0.1) and math.isnan(result["t"])
    assert result["p_t_test"] is None and "every fold's difference is the same" in result["p_note"]


def test_mean_sd_is_the_sample_sd_of_the_finite_values():
    assert mean_sd([1.0, 2.0, 3.0, math.nan]) == {"mean": 2.0, "sd": 1.0, "n": 3}
    one = mean_sd([0.5])
    assert one["mean"] == 0.5 and math.isnan(one["sd"]) and one["n"] == 1


def test_stratified_folds_partition_the_sequences_with_even_class_shares():
    classes = np.array([0] * 23 + [1] * 17 + [2] * 9)
    assignment = stratified_folds(classes, 5, seed=3)
    assert sorted(np.unique(assignment)) == [0, 1, 2, 3, 4]
    sizes = np.bincount(assignment)
    assert sizes.sum() == len(classes) and sizes.max() - sizes.min() <= 1
    for c in range(3):
        per_fold = np.bincount(assignment[classes == c], minlength=5)
        assert per_fold.max() - per_fold.min() <= 1
    assert not np.array_equal(assignment, stratified_folds(classes, 5, seed=4))  # seeded
    splits = kfold_splits(classes, 5, seed=3)
    tests = np.concatenate([s.test for s in splits])
    assert sorted(tests.tolist()) == list(range(len(classes)))  # each sequence in exactly one test fold
    for s in splits:
        assert sorted(np.concatenate([s.train, s.val, s.test]).tolist()) == list(range(len(classes)))
        assert set(classes[s.val]) == {0, 1, 2}  # every class validated


@pytest.mark.parametrize("n, expected", [(1000, 100), (300, 50), (120, 30), (80, 20), (2000, 200)])
def test_the_validation_rule(n, expected):
    assert validation_size(n) == expected


def test_the_validation_share_is_stratified():
    classes = np.array([0] * 150 + [1] * 50)
    train, val = hold_out_validation(np.arange(200), classes, seed=0)
    assert len(val) == 50 and np.bincount(classes[val]).tolist() == [38, 12]  # 25% of each class, rounded
    assert not set(train) & set(val)


def test_classes_too_small_for_the_folds_are_refused():
    assert min_per_class(5) == 5 and min_per_class(2) == 4  # 3 in 2 folds leaves one to train on
    check_class_counts({"a": 5, "b": 40}, 5)
    with pytest.raises(InputError, match=r"too few sequences per class for 5-fold .*\{'a': 4\}.*at least 5"):
        check_class_counts({"a": 4, "b": 40}, 5)


def test_published_results_match_benchmark_names_only():
    nontata = published_results("human_nontata_promoters")
    assert [r.source.split(",")[0] for r in nontata] == ["Nguyen et al. 2023", "Grešová et al. 2023"]
    assert nontata[0].metric == "accuracy" and nontata[0].unit == "%" and nontata[0].scores["HyenaDNA"] == 96.6
    assert published_results("Human_Ensembl_Regulatory")[0].dataset == "human_regulatory"  # the folder's name
    assert published_results("promoter_all")[0].metric == "f1"
    assert published_results("enhancers")[0].scores == {"DNABERT-2": 0.516, "NT-v2 500M": 0.548,
                                                         "Caduceus-Ph 1.9M": 0.546}
    assert published_results("human_nontata_promoters_copy") == [] and published_results("my_promoters") == []


def test_a_published_score_is_set_beside_ours_in_its_metric_and_unit():
    summary = {model: {"accuracy": {"mean": 0.8, "sd": 0.01, "n": 5}, "macro_f1": {"mean": 0.7, "sd": 0.02, "n": 5}}
               for model in ("model", "kmer_lr", "cnn")}
    row, = [r for r in published_rows("splice_sites_all", "multiclass", summary)]
    assert row["metric"] == "accuracy" and row["ours"]["model"]["mean"] == 0.8  # a fraction, as published
    row = published_rows("demo_human_or_worm", "binary", summary)[0]
    assert row["unit"] == "%" and row["ours"]["cnn"] == {"mean": 80.0, "sd": 1.0, "n": 5}
