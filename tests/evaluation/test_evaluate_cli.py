"""``python -m bigbird_dna.evaluate`` end to end: 5-fold cross-validation of a Genomic Benchmarks
folder and of a Nucleotide Transformer CSV folder, seeds on a dataset's own split, published numbers
by the dataset's name, and bad input failing with one ``error:`` line."""

from __future__ import annotations

import contextlib
import io
import json
import math

import numpy as np
import pytest

from bigbird_dna.evaluate.__main__ import main
from tests.conftest import run_cli
from tests.evaluation.conftest import EVALUATE_FAST, genomic_benchmarks_folder, nucleotide_transformer_folder

MODELS = ("model", "kmer_lr", "cnn")


def evaluate(*argv: str) -> tuple[dict, str]:
    """The report and stdout of ``main(argv)`` with the fast overrides."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        report = main([*argv, *EVALUATE_FAST])
    return report, stdout.getvalue()


@pytest.fixture(scope="module")
def nontata(tmp_path_factory, one_thread):
    """5-fold CV of a Genomic Benchmarks folder named like a published dataset (60 + 60 train, 10 + 10 test)."""
    tmp = tmp_path_factory.mktemp("gb")
    root = genomic_benchmarks_folder(tmp / "human_nontata_promoters", {"negative": 60, "positive": 60},
                                     {"negative": 10, "positive": 10})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIGBIRD_DNA_CACHE", str(tmp / "cache"))
        report, stdout = evaluate(str(root), "--out", str(tmp / "out"))
    return root, tmp / "out", report, stdout


@pytest.fixture(scope="module")
def nt_csv(tmp_path_factory, one_thread):
    """5-fold CV of a 3-class Nucleotide Transformer CSV folder (40 per class; test.csv 5 per class)."""
    tmp = tmp_path_factory.mktemp("nt")
    root = nucleotide_transformer_folder(tmp / "my_nt_task", {"0": 40, "1": 40, "2": 40}, {"0": 5, "1": 5, "2": 5})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("BIGBIRD_DNA_CACHE", str(tmp / "cache"))
        report, stdout = evaluate(str(root), "--out", str(tmp / "out"), "--folds", "5", "--seed", "7")
    return root, tmp / "out", report, stdout


def check_partition(out, pooled: set[str], class_of: dict[str, str], folds: int) -> None:
    """folds.json: each pooled sequence in exactly one test fold, every run's parts disjoint and
    covering the pool, and each class's count per test fold within one of the others'."""
    manifest = json.loads((out / "folds.json").read_text())
    runs = manifest["runs"]
    assert manifest["mode"] == "kfold" and len(runs) == folds
    tests = [i for run in runs for i in run["test"]]
    assert sorted(tests) == sorted(pooled)
    for run in runs:
        parts = [set(run[p]) for p in ("train", "val", "test")]
        assert sum(map(len, parts)) == len(set.union(*parts)) and set.union(*parts) == pooled
        assert len(run["val"]) >= 0.1 * (len(run["train"]) + len(run["val"]))
    for name in set(class_of.values()):
        per_fold = [sum(class_of[i] == name for i in run["test"]) for run in runs]
        assert max(per_fold) - min(per_fold) <= 1, (name, per_fold)


def test_cross_validation_of_a_genomic_benchmarks_folder(nontata):
    root, out, report, stdout = nontata
    for name in ("results.md", "results.json", "folds.json", "config.yaml", "fold_1/run/summary.json",
                 "fold_5/data/test.tsv"):
        assert (out / name).exists(), name
    assert report["label_kind"] == "binary" and report["task"] == ["task=promoter", "data=promoter_labelled"]
    assert report["dataset"]["positive_class"] == "positive" and len(report["splits"]) == 5
    class_of = {f"train:{i}": ("negative" if i < 60 else "positive") for i in range(120)}  # classes in name order
    check_partition(out, set(class_of), class_of, 5)
    assert report["protocol"]["set_aside"] == {"test": 20}  # the dataset's own test split is not pooled
    saved = json.loads((out / "results.json").read_text())
    assert len(saved["splits"]) == 5
    for split in saved["splits"]:
        assert set(split["metrics"]) == set(MODELS)
        for model in MODELS:
            assert set(split["metrics"][model]) == {"auroc", "auprc", "accuracy", "f1", "mcc"}
            assert all(v is not None and -1 <= v <= 1 for v in split["metrics"][model].values()), split
    for model in MODELS:  # mean ± sd over the folds
        values = [s["metrics"][model]["accuracy"] for s in saved["splits"]]
        assert saved["summary"][model]["accuracy"]["mean"] == pytest.approx(np.mean(values))
        assert saved["summary"][model]["accuracy"]["sd"] == pytest.approx(np.std(values, ddof=1))
    assert saved["summary"]["kmer_lr"]["auroc"]["mean"] > 0.9  # the tables carry each sequence's own class
    lines = stdout.splitlines()
    assert any(line.startswith("expected: about") for line in lines)
    assert any(line.strip().startswith("fit: ") for line in lines) and "[5/5] fold_5 done in" in stdout
    for name in ("BigBird (this package)", "k-mer LR", "small CNN"):
        assert any(line.startswith(f"| {name} | ") and line.count(" ± ") == 5 for line in lines), name


def test_mcc_and_f1_are_the_runs_own_and_not_swapped(nontata):
    _, out, report, _ = nontata
    for split in report["splits"]:
        summary = json.loads((out / split["name"] / "run" / "summary.json").read_text())
        assert split["metrics"]["model"]["mcc"] == summary["test/mcc"]
        assert split["metrics"]["model"]["f1"] == summary["test/f1"]
        for name in ("kmer_lr", "cnn"):
            assert split["metrics"][name]["mcc"] == summary[f"baseline/{name}/test_mcc"]
            assert split["metrics"][name]["f1"] == summary[f"baseline/{name}/test_f1"]
    header = next(line for line in (out / "results.md").read_text().splitlines() if line.startswith("| model |"))
    assert header == "| model | AUROC | AUPRC | accuracy | F1 | MCC |"


def test_the_paired_comparison_is_the_model_minus_each_baseline_per_fold(nontata):
    _, _, report, stdout = nontata
    for baseline in ("kmer_lr", "cnn"):
        differences = [s["metrics"]["model"]["auroc"] - s["metrics"][baseline]["auroc"] for s in report["splits"]]
        comparison = report["paired"][baseline]["auroc"]
        assert comparison["mean_difference"] == pytest.approx(np.mean(differences))
        assert comparison["n"] == 5
    assert "## Paired comparison: BigBird (this package) minus each baseline, 5 folds" in stdout


def test_published_numbers_stand_beside_ours_for_a_published_dataset_name(nontata):
    _, out, report, _ = nontata
    text = (out / "results.md").read_text()
    assert "## Published results" in text
    hyena = next(line for line in text.splitlines() if line.startswith("| Nguyen et al. 2023"))
    ours = report["summary"]["model"]["accuracy"]
    assert "| accuracy (%) |" in hyena and "CNN 84.6, DNABERT 85.6, HyenaDNA 96.6" in hyena
    assert f"BigBird (this package) {100 * ours['mean']:.1f} ± {100 * ours['sd']:.1f}" in hyena
    assert "benchmark CNN 83.7" in text and "single train/test split" in hyena
    assert [row["metric"] for row in report["published"]] == ["accuracy", "accuracy"]


def test_cross_validation_of_a_nucleotide_transformer_csv_folder(nt_csv):
    _, out, report, stdout = nt_csv
    assert report["label_kind"] == "multiclass" and report["task"] == ["task=classify", "data=classify"]
    assert report["dataset"]["class_names"] == ["0", "1", "2"] and report["protocol"]["seed"] == 7
    class_of = {f"train:{i}": str(i // 40) for i in range(120)}  # train.csv: 40 rows of each label in turn
    check_partition(out, set(class_of), class_of, 5)
    for split in report["splits"]:
        for model in MODELS:
            assert set(split["metrics"][model]) == {"macro_auroc", "accuracy", "macro_f1", "mcc"}
            assert all(math.isfinite(v) for v in split["metrics"][model].values())
    assert report["summary"]["kmer_lr"]["macro_auroc"]["mean"] > 0.9
    assert report["published"] == [] and "Published" not in stdout  # no published dataset is called my_nt_task
    assert "| model | macro AUROC | accuracy | macro F1 | MCC |" in stdout


def test_seeds_train_the_datasets_own_split_once_per_seed(tmp_path, one_thread):
    root = genomic_benchmarks_folder(tmp_path / "demo", {"a": 28, "b": 28}, {"a": 6, "b": 6})
    report, stdout = evaluate(str(root), "--out", str(tmp_path / "out"), "--seeds", "3", "4")
    manifest = json.loads((tmp_path / "out" / "folds.json").read_text())
    first, second = manifest["runs"]
    assert (first["name"], first["seed"], second["seed"]) == ("seed_3", 3, 4)
    assert all(first[p] == second[p] for p in ("train", "val", "test"))  # one fixed split
    assert sorted(first["test"]) == sorted(f"test:{i}" for i in range(12))
    assert len(first["val"]) == 14  # a quarter of the 56 train sequences (the rule's cap)
    assert "2 seeds" in stdout and len(report["splits"]) == 2


@pytest.mark.parametrize("case", ["missing", "layout", "too_few", "out_not_empty", "folds", "folds_and_seeds",
                                  "seeds_without_test", "bad_override", "swapped_task"])
def test_bad_input_is_one_error_line_and_exit_2(tmp_path, capsys, case):
    data = genomic_benchmarks_folder(tmp_path / "data", {"a": 12, "b": 12}, {"a": 2, "b": 2})
    out = tmp_path / "out"
    argv, expected = [str(data), "--out", str(out)], None
    if case == "missing":
        argv[0], expected = str(tmp_path / "nowhere"), "not found; give a Genomic Benchmarks folder"
    elif case == "layout":
        (tmp_path / "odd").mkdir()
        (tmp_path / "odd" / "sequences.fa").write_text(">a\nACGT\n")
        argv[0], expected = str(tmp_path / "odd"), "has no train/ folder and no train.csv or train.tsv"
    elif case == "too_few":
        argv += ["--folds", "20"]  # 20 folds need 20 of each class
        expected = "too few sequences per class for 20-fold cross-validation"
    elif case == "out_not_empty":
        out.mkdir()
        (out / "old.txt").write_text("x")
        expected = "already exists and is not empty"
    elif case == "folds":
        argv += ["--folds", "1"]
        expected = "--folds 1: cross-validation needs at least 2 folds"
    elif case == "folds_and_seeds":
        argv += ["--folds", "3", "--seeds", "0"]
        expected = "argument --seeds: not allowed with argument --folds"
    elif case == "seeds_without_test":
        argv[0] = str(tmp_path / "one.tsv")
        (tmp_path / "one.tsv").write_text("sequence\tlabel\n" + "ACGTACGT\t0\nTTTTACGT\t1\n" * 10)
        argv += ["--seeds", "0", "1"]
        expected = "--seeds needs a dataset with its own test split"
    elif case == "swapped_task":
        argv += ["task=classify"]  # two classes train task=promoter
        expected = "the overrides task=classify swap the task or data group"
    else:
        argv += ["trainer.max_stepz=3"]
        expected = "did you mean trainer.max_steps=3?"
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith("error: ") and expected in err[0], err
    assert case == "out_not_empty" or not out.exists() or not any(out.iterdir())


def test_the_module_exits_2_with_one_error_line(tmp_path):
    result = run_cli("bigbird_dna.evaluate", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out"))
    errors = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(errors) == 1 and errors[0].startswith("error: "), result.stderr
