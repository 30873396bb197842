"""What evaluate reads, without training: the annotation builder's folder, the Nucleotide Transformer
CSVs, one table and one FASTA per class, pooled with ids; and the k-fold plan over them."""

from __future__ import annotations

import numpy as np
import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.evaluate.inputs import read_dataset
from bigbird_dna.evaluate.plan import folds_manifest, plan_splits
from tests.evaluation.conftest import nucleotide_transformer_folder, planted


def annotation_folder(root, counts: dict[str, int]):
    """``root/{train,val,test}.tsv`` as the annotation builder writes them (0/1 labels, more columns)."""
    root.mkdir()
    for split, count in counts.items():
        data = planted({"0": count, "1": count}, seed=len(split))
        rows = [f"{seq}\t{label}\tchr1\t{i * 100}\t{i * 100 + 80}\t+\tpromoter" for label, seqs in data.items()
                for i, seq in enumerate(seqs)]
        header = "sequence\tlabel\trecord\tstart\tend\tstrand\tkind\n"
        (root / f"{split}.tsv").write_text(header + "\n".join(rows) + "\n")
    return root


def test_the_annotation_builders_folder_pools_train_and_val_and_sets_test_aside(tmp_path):
    pool = read_dataset(str(annotation_folder(tmp_path / "atha_promoters", {"train": 20, "val": 5, "test": 4})))
    assert pool.name == "atha_promoters" and pool.layout == "dataset_folder" and pool.label_kind == "binary"
    assert set(pool.source) == {"train", "val", "test"} and pool.class_names == ["0", "1"]
    assert pool.ids[:2] == ["train:0", "train:1"] and pool.ids[40] == "val:0" and pool.ids[-1] == "test:7"
    plan = plan_splits(pool, folds=5, seeds=None, seed=0)
    assert plan["set_aside"] == {"test": 8} and len(plan["pooled"]) == 50
    manifest = folds_manifest(pool, plan)
    tested = sorted(i for run in manifest["runs"] for i in run["test"])
    assert tested == sorted(pool.ids[:50])  # train and val pooled; nothing from test
    seeds = plan_splits(pool, folds=None, seeds=[0, 1], seed=0)["splits"]
    assert [len(seeds[0].val), len(seeds[0].test)] == [10, 8]  # with --seeds, the folder's own val and test


def test_the_nucleotide_transformer_csvs_and_a_plain_table(tmp_path):
    root = nucleotide_transformer_folder(tmp_path / "H3", {"0": 6, "1": 6}, {"0": 2, "1": 2})
    pool = read_dataset(str(root))
    assert pool.name == "H3" and pool.counts() == {"0": 8, "1": 8} and pool.source["train"].endswith("train.csv")
    table = read_dataset(str(root / "train.csv"), name="mine")
    assert table.name == "mine" and table.layout == "table" and set(table.splits) == {"train"}


def test_one_fasta_per_class(tmp_path):
    for name, seqs in planted({"enhancer": 3, "other": 4}, seed=0).items():
        (tmp_path / f"{name}.fa").write_text("".join(f">{name}{i}\n{s}\n" for i, s in enumerate(seqs)))
    pool = read_dataset(f"{{enhancer: {tmp_path / 'enhancer.fa'}, other: {tmp_path / 'other.fa'}}}")
    assert pool.layout == "fasta_per_class" and pool.counts() == {"enhancer": 3, "other": 4}
    assert np.array_equal(pool.classes, [0, 0, 0, 1, 1, 1, 1])


def test_a_class_that_train_lacks_is_refused(tmp_path):
    root = nucleotide_transformer_folder(tmp_path / "odd", {"0": 6, "1": 6}, {"0": 2, "2": 2})
    with pytest.raises(InputError, match=r"the test data .* has class\(es\) \['2'\] that the training data"):
        read_dataset(str(root))
