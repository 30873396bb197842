"""Oriented k-mers for data read on a defined strand: the k-mer LR counts a k-mer and its reverse
complement apart when the CNN reads the given strand only, so a strand-specific signal (a motif
against its own reverse complement) is learnable, which canonical k-mers provably cannot see."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigbird_dna.evaluation.baselines import run_baselines
from bigbird_dna.evaluation.baselines.kmer_lr import affordable_k, fit_kmer_lr
from bigbird_dna.evaluation.baselines.kmers import feature_slices, kmer_frequencies, num_features
from bigbird_dna.evaluation.baselines.sequences import encode_strings, reverse_complement_codes
from bigbird_dna.evaluation.metrics import classification_metrics
from bigbird_dna.model import composition
from bigbird_dna.tokenizer.fixed import char_tokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.baselines.planted import _revcomp, random_dna

MOTIF = "GGGACTTA"  # its reverse complement TAAGTCCC is a different 8-mer


def strand_sets(n: int, seed: int) -> dict[str, tuple[list[str], np.ndarray]]:
    """Positives carry MOTIF, negatives its reverse complement, at a random place of 120 bp."""
    rng = np.random.default_rng(seed)
    out = {}
    for split, rows in (("train", n), ("val", n // 4), ("test", n // 4)):
        labels = rng.integers(0, 2, rows)
        seqs = []
        for label in labels:
            seq = random_dna(rng, 120)
            at = int(rng.integers(0, 120 - len(MOTIF)))
            seqs.append(seq[:at] + (MOTIF if label else _revcomp(MOTIF)) + seq[at + len(MOTIF):])
        out[split] = (seqs, labels.astype(np.float32)[:, None])
    return out


def test_oriented_features_keep_strands_apart_and_match_the_heads_composition_path():
    seqs = ["ACGTTGCAAN", "GGGACTTAC", "ttt"]
    codes, lengths = encode_strings(seqs)
    oriented = kmer_frequencies(codes, 4, oriented=True)
    assert oriented.shape == (3, num_features(4, oriented=True)) == (3, 340)
    assert [num_features(k, oriented=True) for k in range(1, 7)] == [4, 20, 84, 340, 1364, 5460]
    assert not np.allclose(oriented, kmer_frequencies(reverse_complement_codes(codes, lengths), 4, oriented=True))
    # the same numbers, in the same order, as the classifier head's composition path counts on token ids
    ids, _, _ = encode_with_specials(char_tokenizer(), [s.upper() for s in seqs], 64)
    np.testing.assert_allclose(oriented, composition.kmer_frequencies(ids, 4).numpy(), atol=1e-6)
    assert feature_slices(2, oriented=True) == {1: slice(0, 4), 2: slice(0, 20)}


def test_chunking_does_not_change_the_counts():
    codes = np.random.default_rng(0).integers(0, 5, (37, 90)).astype(np.uint8)
    whole = kmer_frequencies(codes, 6, oriented=True)
    np.testing.assert_array_equal(whole, kmer_frequencies(codes, 6, rows_per_chunk=5, oriented=True))


@pytest.fixture(scope="module")
def strand_data():
    data = strand_sets(400, seed=0)
    return data, {s: encode_strings(seqs)[0] for s, (seqs, _) in data.items()}


@pytest.mark.parametrize("oriented", [False, True])
def test_only_oriented_kmers_tell_a_motif_from_its_reverse_complement(strand_data, oriented):
    data, codes = strand_data
    x = {s: kmer_frequencies(c, 4, oriented=oriented) for s, c in codes.items()}
    model = fit_kmer_lr(x["train"], data["train"][1], x["val"], data["val"][1], "binary", max_k=4, oriented=oriented)
    assert model.oriented is oriented
    auroc = classification_metrics(model.predict(x["test"]), torch.from_numpy(data["test"][1]), "binary")["auroc"]
    if oriented:
        assert auroc > 0.9
    else:  # canonical counts of the two classes have the same distribution
        assert 0.35 <= auroc <= 0.65


def test_oriented_k_budget_counts_the_wider_features():
    assert affordable_k(6000, 1, max_k=6, oriented=True) == 6  # 6000 x 5460 multiply-adds fit
    assert affordable_k(50000, 1, max_k=6, oriented=True) == 5 < affordable_k(50000, 1, max_k=6) == 6


def test_run_baselines_counts_oriented_kmers_where_the_cnn_reads_the_given_strand(strand_data):
    from bigbird_dna.data.labelled import LabelledSequences

    data, _ = strand_data
    datasets = {s: LabelledSequences(seqs, labels) for s, (seqs, labels) in data.items()}
    settings = {"cnn_max_epochs": 1, "kmer_max_k": 4}
    given = run_baselines(datasets, "binary", settings, both_strands=False)
    both = run_baselines(datasets, "binary", settings, both_strands=True)
    assert given["baseline/kmer_lr/strands"] == "given" and both["baseline/kmer_lr/strands"] == "both"
    assert given["baseline/kmer_lr/test_auroc"] > 0.9 > 0.65 > both["baseline/kmer_lr/test_auroc"]
