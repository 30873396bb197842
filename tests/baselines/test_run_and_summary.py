"""The baselines of a data module (``evaluation.reference``), their summary keys, and the summary
lines: a broken model provably does not beat them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torchmetrics.functional.classification import binary_auroc

from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequences
from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.baselines import run_baselines
from bigbird_dna.evaluation.baselines.sequences import coded_split
from bigbird_dna.evaluation.reference import check_settings, reference_metrics
from bigbird_dna.evaluation.summary import baseline_rows, composition_rows
from bigbird_dna.tasks.base import summary_table
from bigbird_dna.tasks.promoter import format_summary
from tests.baselines.planted import splits

FAST = {"cnn_max_epochs": 5, "kmer_max_k": 4}


@pytest.fixture(scope="module")
def planted():
    return splits(600, 80, seed=0)


@pytest.fixture(scope="module")
def baselines(planted):
    module = LabelledDataModule(planted, batch_size=8, num_workers=0, seed=0, baselines=FAST)
    assert module.label_kind == "binary"  # one label column
    return reference_metrics(module)


def test_reference_metrics_keys(baselines, planted):
    assert baselines["baseline/split"] == "test" and baselines["baseline/eval_samples"] == len(planted["test"])
    for name in ("kmer_lr", "cnn"):
        assert baselines[f"baseline/{name}/test_auroc"] > 0.9, name
        assert 0 < baselines[f"baseline/{name}/test_auprc"] <= 1
    assert 1 <= baselines["baseline/kmer_lr/k"] <= 4 and baselines["baseline/kmer_lr/l2"] > 0
    assert baselines["baseline/kmer_lr/chosen_on"] == "val"  # 150 validation rows
    assert 1 <= baselines["baseline/cnn/best_epoch"] <= baselines["baseline/cnn/epochs"] <= 5
    assert baselines["baseline/seconds"] > 0
    assert baselines["baseline/cnn/strands"] == "given"  # the module neither flips nor averages strands


def test_the_baselines_read_strands_as_the_data_does(planted, monkeypatch):
    """Strand augmentation or both-strand evaluation in the data: the CNN trains and scores on both
    strands and the k-mer LR counts canonical k-mers; oriented data: the given strand, oriented k-mers."""
    import bigbird_dna.evaluation.baselines.run as run_module

    seen, oriented = [], []
    monkeypatch.setattr(run_module, "_cnn", lambda *args, **kwargs: seen.append(kwargs["both_strands"]) or {})
    monkeypatch.setattr(run_module, "_kmer_lr", lambda *args, **kwargs: oriented.append(kwargs["oriented"]) or {})
    for settings in ({}, {"reverse_complement_prob": 0.5}, {"eval_reverse_complement": True}):
        reference_metrics(LabelledDataModule(planted, batch_size=8, num_workers=0, seed=0, baselines=FAST, **settings))
    assert seen == [False, True, True] and oriented == [True, False, False]


def test_a_broken_model_does_not_beat_the_baselines(baselines, planted):
    labels = torch.from_numpy(planted["test"].labels[:, 0]).long()
    constant = torch.full((len(labels),), 0.5)  # a broken model: the same probability for everything
    broken = binary_auroc(constant, labels).item()
    assert broken == pytest.approx(0.5)
    rows = dict(baseline_rows({"test/auroc": broken, **baselines}))
    assert len(rows) == 3
    for name, text in rows.items():
        if name.startswith("vs "):
            assert "does NOT beat it" in text and "beats it by" not in text, (name, text)
    k = baselines["baseline/kmer_lr/k"]
    # the planted data is not flipped: the LR counted oriented k-mers
    assert f"vs k-mer LR (oriented k=1..{k})" in rows and "vs small CNN (3 conv, max pool)" in rows
    perfect = binary_auroc(labels.float(), labels).item()  # the labels themselves
    assert all("beats it by" in text or "+0.0000" in text
               for name, text in baseline_rows({"test/auroc": perfect, **baselines}) if name.startswith("vs "))


def test_summary_wording_and_fallbacks():
    summary = {"baseline/split": "test", "baseline/kmer_lr/test_auroc": 0.77, "baseline/kmer_lr/k": 4,
               "baseline/cnn/test_auroc": 0.8025, "baseline/seconds": 12.0, "baseline/train_samples": 100}
    text = summary_table("t", baseline_rows({**summary, "test/auroc": 0.7823}))
    assert "vs k-mer LR (k=1..4)" in text and "test AUROC 0.7700: beats it by 0.0123" in text
    assert "test AUROC 0.8025: does NOT beat it (-0.0202)" in text
    only_val = dict(baseline_rows({**summary, "val/auroc": 0.9}))
    assert only_val["vs k-mer LR (k=1..4)"].endswith("(model's AUROC on val, baselines' on test)")
    assert baseline_rows({"baseline/skipped": "disabled"}) == [("baselines", "skipped: disabled")]
    assert baseline_rows({"val/auroc": 0.5}) == []  # no baselines, no rows
    promoter = format_summary({"global_step": 2, "val/loss": 0.6, "val/f1": 0.5, "val/mcc": 0.1, "val/auroc": 0.6,
                               "val/auprc": 0.6, "test/auroc": 0.5, "test/auprc": 0.5, "best_checkpoint": "b",
                               "export": "e", "seconds": 1.0, **summary})
    assert "does NOT beat it (-0.2700)" in promoter and "vs small CNN" in promoter


def test_the_summary_says_when_the_network_adds_next_to_nothing_to_its_composition_path():
    # seed 5 of the ten-seed promoter runs: its network was silent, and the model scored the path's AUROC
    silent = dict(composition_rows({"composition/val_auroc": 0.8610, "val/auroc": 0.8611}))
    assert silent["vs its composition path alone"].startswith("val AUROC 0.8610: the network adds +0.0001 (next to")
    healthy = dict(composition_rows({"composition/val_auroc": 0.8610, "val/auroc": 0.8774}))
    assert healthy["vs its composition path alone"] == "val AUROC 0.8610: the network adds +0.0164"
    worse = dict(composition_rows({"composition/val_auroc": 0.8610, "val/auroc": 0.85}))
    assert "adds -0.0110 (next to nothing" in worse["vs its composition path alone"]
    assert composition_rows({"val/auroc": 0.9}) == []  # no kept path, no row
    assert composition_rows({"composition/val_auroc": 0.8, "val/auroc": float("nan")}) == []
    macro = composition_rows({"composition/val_auroc": 0.7, "val/macro_auroc": 0.75}, "macro AUROC", "macro_auroc")
    assert macro == [("vs its composition path alone", "val macro AUROC 0.7000: the network adds +0.0500")]
    promoter = format_summary({"global_step": 2, "val/loss": 0.6, "val/f1": 0.5, "val/mcc": 0.1, "val/auroc": 0.8611,
                               "val/auprc": 0.6, "best_checkpoint": "b", "export": "e", "seconds": 1.0,
                               "composition/val_auroc": 0.8610})
    assert "vs its composition path alone  val AUROC 0.8610: the network adds +0.0001 (next to nothing" in promoter


def test_settings_kinds_and_skips(planted):
    with pytest.raises(InputError, match="unknown data.baselines"):
        check_settings(LabelledDataModule(planted, 8, 0, 0, baselines={"max_trian": 5}))
    off = LabelledDataModule(planted, 8, 0, 0, baselines={"enabled": False})
    assert reference_metrics(off) == {"baseline/skipped": "disabled (data.baselines.enabled=false)"}
    multi = {s: LabelledSequences(d.seqs, np.repeat(d.labels, 2, axis=1)) for s, d in planted.items()}
    assert LabelledDataModule(multi, 8, 0, 0).label_kind == "multilabel"
    with pytest.raises(InputError, match="does not fit"):
        run_baselines(planted, "multiclass", FAST)
    one_class = {s: LabelledSequences(d.seqs, np.zeros(len(d))) for s, d in planted.items()}
    assert "lack a class" in run_baselines(one_class, "binary", FAST)["baseline/skipped"]


def test_multilabel_run_and_val_fallback(planted):
    labels = {s: np.stack([d.labels[:, 0], 1 - d.labels[:, 0]], 1) for s, d in planted.items()}
    data = {s: LabelledSequences(planted[s].seqs[:200], labels[s][:200]) for s in ("train", "val")}
    out = run_baselines(data, "multilabel", {"cnn_max_epochs": 1, "kmer_max_k": 2, "max_train": 150})
    assert out["baseline/split"] == "val" and out["baseline/train_samples"] == 150
    assert out["baseline/eval_samples"] == 150  # the whole val split (150 rows) is scored
    assert out["baseline/kmer_lr/val_labels_scored"] == 2 and "baseline/cnn/val_auroc_median" in out


class _FakeDeepSEAFile:
    """What coded_split reads of a DeepSEA stream: ``len`` and ``read(start, stop)``, one-hot A, G, C, T."""

    def __init__(self, n: int, length: int):
        rng = np.random.default_rng(0)
        self.x = np.zeros((n, 4, length), dtype=np.uint8)
        self.codes = rng.integers(0, 5, (n, length))
        for channel, code in enumerate((0, 2, 1, 3)):
            self.x[:, channel] = self.codes == code
        self.y = rng.integers(0, 2, (n, 3)).astype(np.uint8)

    def __len__(self):
        return len(self.x)

    def read(self, start, stop):
        return self.x[start:stop], self.y[start:stop]


def test_deepsea_one_hot_streams_are_read_as_codes():
    class Stream:
        file = _FakeDeepSEAFile(1000, 20)

    whole = coded_split(Stream(), None, 0)
    assert np.array_equal(whole.codes, Stream.file.codes) and whole.labels.shape == (1000, 3)
    part = coded_split(Stream(), 300, 0)
    assert len(part) == 300 and part.lengths.tolist() == [20] * 300


def test_a_val_split_too_small_to_choose_on_gives_a_cross_validated_kmer_lr(planted):
    small = {"train": LabelledSequences(planted["train"].seqs[:90], planted["train"].labels[:90]),
             "val": LabelledSequences(planted["val"].seqs[:10], planted["val"].labels[:10]),
             "test": planted["test"]}
    out = run_baselines(small, "binary", {"cnn_max_epochs": 1, "kmer_max_k": 3})
    assert out["baseline/kmer_lr/chosen_on"] == "cross-validation"
    assert out["baseline/kmer_lr/test_auroc"] > 0.7  # a motif found from 90 rows, with no val to choose on
