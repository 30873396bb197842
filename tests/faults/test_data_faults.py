"""Faults injected into the data side: a one-class validation set, inputs that used to get errors
naming the wrong thing (a folder as a FASTA, an all-N genome, a gzip that is not a FASTA), and an
unwritable or full output folder for the tokenizer CLI and the export writer."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from bigbird_dna.data.promoter.datamodule import LabelledPromoterData, stratified_holdout
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.fasta import prepare_genome
from bigbird_dna.genome.text import open_text
from bigbird_dna.model.export import write_export
from tests.conftest import LAMBDA, run_cli
from tests.promoter.conftest import TINY_MODEL, lambda_seq, tiny_tokenizer  # noqa: F401

SEQ = lambda_seq()


def _table(path, positives: int, negatives: int):
    rows = [f"{SEQ[i * 50:i * 50 + 50]}\t1" for i in range(positives)]
    rows += [f"{SEQ[i * 50 + 5000:i * 50 + 5050]}\t0" for i in range(negatives)]
    path.write_text("sequence\tlabel\n" + "\n".join(rows) + "\n")
    return path


def _labelled(tmp_path, **data):
    settings = {"sequence_column": "sequence", "label_column": "label", "val": None, "test": None,
                "val_fraction": 0.1, "batch_size": 4, "num_workers": 0, **data}
    return LabelledPromoterData(seed=0, run_dir=tmp_path, is_main_process=False, **settings)


def test_the_val_fraction_is_held_out_per_class_so_val_has_both(tmp_path):
    data = _labelled(tmp_path, train=str(_table(tmp_path / "train.tsv", 20, 2)))
    val = data.datasets["val"]
    labels = sorted(val.dataset.labels[i, 0] for i in val.indices)
    assert labels == [0.0, 1.0, 1.0]  # 10% of 20 positives, and one of the 2 negatives
    kept, held = stratified_holdout(np.array([1.0] * 20 + [0.0] * 2), 0.1, seed=0)
    assert sorted(kept + held) == list(range(22)) and not set(kept) & set(held)


@pytest.mark.parametrize("counts, given, needle", [
    ((20, 1), False, "held out of .* holds 2 positives and 0 negatives"),
    ((20, 0), True, "the validation set .*val.tsv holds 20 positives and 0 negatives"),
])
def test_a_validation_set_of_one_class_is_refused_with_its_counts(tmp_path, counts, given, needle):
    train = _table(tmp_path / "train.tsv", 20, 1)
    val = _table(tmp_path / "val.tsv", *counts) if given else None
    with pytest.raises(InputError, match=needle):
        _labelled(tmp_path, train=str(train), val=str(val) if val else None)


def test_a_folder_given_as_a_fasta_is_named_a_folder(tmp_path):
    with pytest.raises(InputError, match="is a directory, not a file"):
        open_genome(tmp_path)
    with pytest.raises(InputError, match="is a directory, not a file"):
        open_text(tmp_path, "BED file")


def test_an_all_n_genome_names_the_file_and_the_n_problem(tmp_path):
    fasta = tmp_path / "gaps.fa"
    fasta.write_text(">chrUn\n" + "N" * 3000 + "\n>chrR\nRYRYRY\n")
    with pytest.raises(InputError, match=r"gaps\.fa holds no A, C, G or T: all 3,006 bp are N"):
        prepare_genome(fasta, cache_dir=tmp_path / "cache")


def test_a_gzip_that_is_not_a_fasta_names_the_users_file_and_leaves_no_cache_copy(tmp_path):
    reads = tmp_path / "reads.txt.gz"
    with gzip.open(reads, "wt") as handle:
        handle.write("@read1\nACGT\n+\nIIII\n")
    cache = tmp_path / "cache"
    with pytest.raises(InputError) as err:
        prepare_genome(reads, cache_dir=cache)
    assert str(reads) in str(err.value) and "not a FASTA" in str(err.value) and str(cache) not in str(err.value)
    assert list(cache.iterdir()) == []


def _blocked(tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    return blocker / "sub"


def test_the_tokenizer_cli_refuses_an_unwritable_output_before_training(tmp_path):
    result = run_cli("bigbird_dna.tokenizer", "--fasta", str(LAMBDA), "--vocab-size", "64", "--out",
                     str(_blocked(tmp_path) / "tok.json"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write") and "a_file" in lines[0], lines
    assert "sampled" not in result.stdout  # refused before any work


def test_the_export_writer_refuses_an_unwritable_folder(tmp_path, tiny_tokenizer):  # noqa: F811
    with pytest.raises(InputError, match="cannot write the export .*a_file"):
        write_export(_blocked(tmp_path) / "export", "mlm", {}, TINY_MODEL, tiny_tokenizer)


def test_a_full_disk_under_the_tokenizer_cli_and_the_export(small_tmpfs, tiny_tokenizer):  # noqa: F811
    import torch

    tiny_disk = small_tmpfs("16k")
    result = run_cli("bigbird_dna.tokenizer", "--fasta", str(LAMBDA), "--vocab-size", "1024", "--out",
                     str(tiny_disk / "tok.json"), "--sample-bp", "40000")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write") and "No space" in lines[0], lines
    with pytest.raises(InputError, match="cannot write the export .*No space left"):
        write_export(tiny_disk / "export", "mlm", {"w": torch.zeros(100_000)}, TINY_MODEL, tiny_tokenizer)
    assert list(tiny_disk.iterdir()) == []
