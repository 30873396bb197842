"""``data=classify``: the three input layouts, class order, the val hold-out, the manifest, and the
errors a user can make; and the softmax/cross-entropy pieces of ``ClassifyTask``."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bigbird_dna.data.classes.datamodule import SequenceClassData, sorted_class_names
from bigbird_dna.errors import InputError
from bigbird_dna.tasks.classify import ClassifyTask, metric_keys, resolve_class_weights
from tests.classify.conftest import MOTIFS, planted, write_class_folders, write_fasta_per_class, write_table

SETTINGS = {"val_fraction": 0.25, "sequence_column": "sequence", "label_column": "label", "batch_size": 4,
            "num_workers": 0, "baselines": {"enabled": False}}
TINY_MODEL = {"vocab_size": 16, "hidden_size": 16, "num_layers": 1, "num_heads": 2, "intermediate_size": 32,
              "max_positions": 128, "attention": {"block_size": 16}}


def build(tmp_path, **data):
    return SequenceClassData(seed=0, run_dir=tmp_path / "run", **{**SETTINGS, **data})


def test_the_three_layouts_give_the_same_sorted_classes_and_one_hot_labels(tmp_path):
    data = planted(8, length=60, seed=1)
    fasta = {name: str(path) for name, path in write_fasta_per_class(tmp_path / "fa", data).items()}
    sources = {"fasta": {"train": dict(reversed(fasta.items()))},
               "table": {"train": str(write_table(tmp_path / "t.csv", data, sep=","))},
               "folders": {"dir": str(write_class_folders(tmp_path / "gb" / "train", data).parent)}}
    for layout, source in sources.items():
        module = build(tmp_path / layout, **source)
        assert module.class_names == sorted(MOTIFS), layout
        assert module.label_kind == "multiclass"
        assert module.task_inputs() == {"class_names": sorted(MOTIFS), "class_counts": [6, 6, 6]}
        val = module.datasets["val"]
        seq, label = val[0]
        assert label.dtype == np.float32 and label.shape == (3,) and label.sum() == 1.0
        assert MOTIFS[module.class_names[int(label.argmax())]] in seq
        manifest = json.loads((tmp_path / layout / "run" / "split_manifest.json").read_text())
        assert manifest["class_names"] == sorted(MOTIFS)
        assert manifest["samples"] == {"train": dict.fromkeys(sorted(MOTIFS), 6),
                                       "val": dict.fromkeys(sorted(MOTIFS), 2)}
        assert sorted(module.training_sequences()) == sorted(module.datasets["train"][i][0] for i in range(18))


def test_the_holdout_is_seeded_and_stratified(tmp_path):
    table = str(write_table(tmp_path / "t.tsv", planted(10, length=40)))
    first, again = build(tmp_path / "a", train=table), build(tmp_path / "b", train=table)
    assert first.datasets["val"].indices == again.datasets["val"].indices
    other = SequenceClassData(seed=1, run_dir=tmp_path / "c", train=table, **SETTINGS)
    assert other.datasets["val"].indices != first.datasets["val"].indices
    assert first.counts["val"] == {"alpha": 2, "beta": 2, "gamma": 2}


def test_integer_labels_sort_numerically_and_val_and_test_tables_are_read(tmp_path):
    seqs = planted(4, length=40)["alpha"]
    rows = [(s, label) for label in (10, 2, 1) for s in seqs]
    train = tmp_path / "train.tsv"
    train.write_text("seq\tclass\n" + "".join(f"{s}\t{y}\n" for s, y in rows))
    test = tmp_path / "test.tsv"
    test.write_text("seq\tclass\n" + f"{seqs[0]}\t2\n")
    module = build(tmp_path, train=str(train), val=str(train), test=str(test), sequence_column="seq",
                   label_column="class")
    assert module.class_names == ["1", "2", "10"] and sorted_class_names(["b", "a", "10"]) == ["10", "a", "b"]
    assert module.datasets["test"].labels.tolist() == [[0.0, 1.0, 0.0]] and module.has_test_data()
    assert module.counts["test"] == {"1": 0, "2": 1, "10": 0}


def test_a_genomic_benchmarks_folder_may_hold_fasta_files_and_skips_hidden_ones(tmp_path):
    data = planted(4, length=50)
    root = write_class_folders(tmp_path / "gb" / "train", data).parent
    write_class_folders(root / "test", {"beta": data["beta"][:2]})
    (root / "train" / "gamma" / "many.fa").write_text(">x\nACGTACGT\n>y\nGGGG\nCCCC\n")
    (root / "train" / "gamma" / ".DS_Store").write_text("not a sequence")
    (root / "train" / "README").write_text("a file beside the class folders is not a class")
    module = build(tmp_path, dir=str(root))
    assert module.counts["train"]["gamma"] + module.counts["val"]["gamma"] == 6
    assert module.counts["test"] == {"alpha": 0, "beta": 2, "gamma": 0}
    assert "GGGGCCCC" in module.training_sequences() or "GGGGCCCC" in [s for s, _ in module.datasets["val"]]


@pytest.mark.parametrize("case, message", [
    ("no_train", "data.train is not set"),
    ("one_class", "has 1 class"),
    ("missing_column", "no column(s) ['label']"),
    ("unknown_val_class", "has class(es) ['delta'] that the training data does not have"),
    ("empty_class_folder", "holds no sequence files"),
    ("dir_without_train", "has no train/ folder"),
    ("dir_and_train", "are both set"),
    ("class_too_small_for_val", "has no sequence of class(es) ['gamma']"),
    ("empty_label", "the class label is empty"),
])
def test_bad_inputs_are_named(tmp_path, case, message):
    data = planted(4, length=40)
    table = write_table(tmp_path / "t.tsv", data)
    inputs = {"no_train": {}, "one_class": {"train": str(write_table(tmp_path / "one.tsv", {"a": data["alpha"]}))},
              "missing_column": {"train": str(table), "label_column": "label"},
              "unknown_val_class": {"train": str(table), "val": str(write_table(tmp_path / "v.tsv", {
                  "delta": data["alpha"], **data}))},
              "dir_without_train": {"dir": str(tmp_path)}, "dir_and_train": {"dir": str(tmp_path), "train": str(table)},
              "class_too_small_for_val": {"train": str(write_table(tmp_path / "s.tsv", {
                  "alpha": data["alpha"], "beta": data["beta"], "gamma": data["gamma"][:1]}))}}
    if case == "missing_column":
        (tmp_path / "t.tsv").write_text("sequence\tclass\nACGT\ta\n")
    if case == "empty_class_folder":
        root = write_class_folders(tmp_path / "gb", data)
        (root / "delta").mkdir()
        inputs[case] = {"train": str(root)}
    if case == "empty_label":
        (tmp_path / "e.tsv").write_text("sequence\tlabel\nACGT\ta\nACGT\t \n")
        inputs[case] = {"train": str(tmp_path / "e.tsv")}
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        build(tmp_path, **inputs[case])


def test_classify_task_is_a_softmax_with_cross_entropy_and_per_class_auroc():
    module = ClassifyTask(TINY_MODEL, {}, class_names=["a b", "c", "d"])
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 3.0, 0.0]])
    probs = module.probabilities(logits)
    assert torch.allclose(probs.sum(1), torch.ones(2)) and torch.allclose(probs, torch.softmax(logits, 1))
    labels = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    assert torch.isclose(module.loss(logits, labels), torch.nn.functional.cross_entropy(logits, torch.tensor([0, 2])))
    probs = torch.tensor([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1]])
    targets = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 0, 0], [0, 1, 0]])  # no sequence of class "d"
    metrics = module.compute_metrics(probs, targets)
    assert metrics["accuracy"] == 1.0 and metrics["auroc_a_b"] == 1.0 and metrics["auroc_c"] == 1.0
    assert torch.isnan(metrics["auroc_d"]) and metrics["macro_auroc"] == 1.0
    assert metric_keys(["a/b", "a b"]) == ["0", "1"]


def test_class_weights_and_bad_task_settings():
    names = ["a", "b", "c"]
    assert resolve_class_weights(None, names, [1, 2, 3]) is None
    assert resolve_class_weights("balanced", names, [10, 20, 30]).tolist() == pytest.approx([2.0, 1.0, 2 / 3])
    assert resolve_class_weights({"b": 3}, names, None).tolist() == [1.0, 3.0, 1.0]
    assert resolve_class_weights([1, 2, 3], names, None).tolist() == [1.0, 2.0, 3.0]
    for bad in ([1, 2], [1, 0, 1], {"z": 1}, "heavy"):
        with pytest.raises(InputError, match="class_weights"):
            resolve_class_weights(bad, names, [1, 1, 1])
    with pytest.raises(InputError, match="pair it with data=classify"):
        ClassifyTask(TINY_MODEL, {})
    with pytest.raises(InputError, match="at least 2 classes"):
        ClassifyTask(TINY_MODEL, {}, class_names=["only"])
    with pytest.raises(InputError, match="task.class_weights instead"):
        ClassifyTask(TINY_MODEL, {}, class_names=names, pos_weight=8.0)


def test_two_classes_are_a_softmax_over_two(tmp_path):
    data = planted(6, length=40)
    module = build(tmp_path, train=str(write_table(tmp_path / "t.tsv", {k: data[k] for k in ("beta", "alpha")})))
    assert module.class_names == ["alpha", "beta"] and module.datasets["val"][0][1].shape == (2,)
    task = ClassifyTask(TINY_MODEL, {}, **module.task_inputs())
    probs = task.probabilities(torch.tensor([[0.0, 1.0], [2.0, -1.0]]))
    metrics = task.compute_metrics(probs, torch.tensor([[0, 1], [1, 0]]))
    assert metrics["macro_auroc"] == 1.0 and metrics["accuracy"] == 1.0
    assert set(metrics) >= {"auroc_alpha", "auroc_beta"}
