"""Promoter classification data, from EPDnew + a genome or from labelled files (``data.source``).

``source: epdnew`` (``conf/data/promoter_epdnew.yaml``): positives are strand-aware windows around
every TSS of an EPDnew BED (:mod:`bigbird_dna.data.promoter.epdnew`); negatives are DeePromoter-style
(:mod:`bigbird_dna.data.promoter.negatives`), optionally plus random genomic windows far from any
TSS. Splits hold out whole chromosomes (``val_records``/``test_records``), or, for one-record
genomes, the end of each record (``holdout_fraction``); see :mod:`bigbird_dna.genome.splits`. The
realised split, with sample counts, is written to ``split_manifest.json``.

``source: labelled`` (``conf/data/promoter_labelled.yaml``): TSV/CSV or one FASTA per class for
train, and optionally val and test; without val, a seeded ``val_fraction`` of each class of train
is held out (stratified). A validation set with one class is refused (its AUROC is undefined).

Sequences are read lazily, one per item, from the genome, whose handle each worker process opens
itself (:class:`~bigbird_dna.genome.reader.GenomeReader`); a
DeePromoter negative is derived from its positive with a generator seeded by ``(seed, split, index)``,
so every epoch, rank and worker sees the same negatives.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

import numpy as np
from torch.utils.data import Dataset, Subset

from bigbird_dna.data.labelled import LabelledDataModule
from bigbird_dna.data.promoter.epdnew import (
    FarFromTssSampler,
    Window,
    assign_to_splits,
    check_windows,
    promoter_window,
    read_epdnew_bed,
)
from bigbird_dna.data.promoter.files import read_labelled
from bigbird_dna.data.promoter.negatives import deepromoter_negative
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.genome.splits import SPLITS, resolve_splits, write_split_manifest
from bigbird_dna.runtime.atomic import write_text_atomic

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PromoterSample:
    """A window and its label; ``derived`` windows become a DeePromoter negative of their sequence."""

    window: Window
    label: float
    derived: bool = False


class PromoterWindowDataset(Dataset):
    """``(seq, labels [1])`` items read from the genome (0-based, half-open windows).

    Args:
        genome: the genome the windows lie on.
        samples: the split's windows and labels.
        seed: seeds each DeePromoter negative together with ``stream`` and the item index.
        stream: a number distinguishing the split (0 train, 1 val, 2 test).
        negatives: the ``data.negatives`` config (mode, num_chunks, num_kept).
    """

    def __init__(self, genome: GenomeReader, samples: list[PromoterSample], seed: int, stream: int,
                 negatives: dict):
        self.genome = genome
        self.samples = samples
        self.seed = seed
        self.stream = stream
        self.negatives = negatives

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> tuple[str, np.ndarray]:
        sample = self.samples[index]
        seq = sample.window.read(self.genome)
        if sample.derived:
            stream = np.random.SeedSequence(self.seed, spawn_key=(self.stream, index))
            seq = deepromoter_negative(seq, np.random.Generator(np.random.PCG64(stream)),
                                       self.negatives["mode"], self.negatives["num_chunks"],
                                       self.negatives["num_kept"])
        return seq, np.array([sample.label], dtype=np.float32)


class EpdnewPromoterData(LabelledDataModule):
    """Promoter windows around EPDnew TSSs of one genome, with generated negatives.

    Args:
        seed: run seed (negatives, random windows, batch order).
        run_dir: where ``split_manifest.json`` goes.
        is_main_process: only the main process writes files.
        **data: the settings of ``conf/data/promoter_epdnew.yaml``.
    """

    def __init__(self, seed: int, run_dir: str | Path, is_main_process: bool = True, **data: Any):
        unset = [key for key in ("fasta", "bed") if not data.get(key)]
        if unset:
            raise InputError(f"data.{' and data.'.join(unset)} not set: data=promoter_epdnew needs "
                             "data.fasta=GENOME.fa and data.bed=EPDNEW.bed (or use data=promoter_labelled).")
        self.genome = open_genome(data["fasta"], data.get("cache_dir"))
        lengths = self.genome.record_lengths
        tss = read_epdnew_bed(data["bed"])
        windows = check_windows([promoter_window(t, data["upstream_bp"], data["downstream_bp"]) for t in tss],
                                lengths, str(data["bed"]), data["skip_out_of_bounds"])
        window_bp = data["upstream_bp"] + data["downstream_bp"]
        self.splits = resolve_splits(lengths, data.get("train_records"), list(data.get("val_records") or []),
                                     list(data.get("test_records") or []), data["holdout_fraction"],
                                     min_length=window_bp)
        positives = assign_to_splits(windows, self.splits)
        negatives = data["negatives"]
        far = FarFromTssSampler(tss, window_bp, negatives["min_tss_distance_bp"], data["max_n_fraction"])
        samples = {}
        for stream, split in enumerate(SPLITS):
            rng = np.random.default_rng([seed, stream])
            found = [PromoterSample(w, 1.0) for w in positives[split]]
            found += [PromoterSample(w, 0.0, derived=True)
                      for w in positives[split] for _ in range(negatives["deepromoter"])]
            count = round(negatives["random_genomic"] * len(positives[split]))
            found += [PromoterSample(w, 0.0) for w in far.sample(self.genome, self.splits[split], count, rng)]
            samples[split] = found
        datasets = {split: PromoterWindowDataset(self.genome, samples[split], seed, stream, negatives)
                    for stream, split in enumerate(SPLITS)}
        super().__init__(datasets, data["batch_size"], data["num_workers"], seed, baselines=data.get("baselines"))
        self.counts = {split: {"positives": len(positives[split]), "negatives": len(s) - len(positives[split])}
                       for split, s in samples.items()}
        log.info("promoter windows per split: %s", self.counts)
        if is_main_process:
            write_split_manifest(Path(run_dir) / "split_manifest.json", self.splits, str(data["fasta"]), {
                "bed": str(data["bed"]), "upstream_bp": data["upstream_bp"], "downstream_bp": data["downstream_bp"],
                "seed": seed, "samples": self.counts, "negatives": negatives})

    def training_sequences(self) -> Iterable[str]:
        """Random genome chunks of the train split, for training a tokenizer from scratch."""
        regions = list(self.splits["train"])  # Region unpacks as (record, start, end)
        return sample_training_chunks(self.genome, regions, total_bp=10 ** 12, seed=self.seed,
                                      min_chunk_bp=min(1000, min(e - s for _, s, e in regions)))


def check_both_classes(labels: np.ndarray, what: str, fix: str) -> None:
    """Refuse a set with one class: AUROC, AUPRC and MCC are undefined on it (``nan``), and the best
    checkpoint would be chosen on ``nan``."""
    positives = int((labels == 1).sum())
    negatives = len(labels) - positives
    if not positives or not negatives:
        raise InputError(f"{what} holds {positives} positives and {negatives} negatives; AUROC is undefined with "
                         f"one class, so {fix}.")


def stratified_holdout(labels: np.ndarray, fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """``(kept, held_out)`` indices: a seeded ``fraction`` of each class held out (at least one of a
    class with two or more members, so the held-out set has both classes when the data does)."""
    rng = np.random.default_rng(seed)
    kept, held_out = [], []
    for value in np.unique(labels):
        members = rng.permutation(np.flatnonzero(labels == value))
        cut = min(max(1, round(fraction * len(members))), len(members) - 1)
        held_out += members[:cut].tolist()
        kept += members[cut:].tolist()
    return sorted(kept), sorted(held_out)


class LabelledPromoterData(LabelledDataModule):
    """Promoter / non-promoter sequences from TSV/CSV tables or one FASTA per class.

    Args:
        seed: run seed (val hold-out, batch order).
        run_dir: where ``split_manifest.json`` goes.
        is_main_process: only the main process writes files.
        **data: the settings of ``conf/data/promoter_labelled.yaml``.
    """

    def __init__(self, seed: int, run_dir: str | Path, is_main_process: bool = True, **data: Any):
        if not data.get("train"):
            raise InputError("data.train is not set: give a TSV/CSV path, or {1: positives.fa, 0: negatives.fa}.")
        columns = (data["sequence_column"], data["label_column"])
        train = read_labelled(data["train"], *columns)
        if data.get("val"):
            val: Dataset = read_labelled(data["val"], *columns)
            check_both_classes(val.labels[:, 0], f"the validation set {data['val']}", "give a data.val with both")
        else:
            fraction = data["val_fraction"]
            if not 0.0 < fraction < 1.0:
                raise InputError(f"data.val_fraction={fraction} must lie in (0, 1) when data.val is not given.")
            kept, held_out = stratified_holdout(train.labels[:, 0], fraction, seed)
            check_both_classes(train.labels[held_out, 0], f"the validation set held out of {data['train']} "
                               f"(data.val_fraction={fraction}, stratified)", "give both classes at least two "
                               "sequences in data.train, or a data.val with both")
            train, val = Subset(train, kept), Subset(train, held_out)
        test = read_labelled(data["test"], *columns) if data.get("test") else []
        super().__init__({"train": train, "val": val, "test": test}, data["batch_size"], data["num_workers"], seed,
                         baselines=data.get("baselines"),
                         reverse_complement_prob=data.get("reverse_complement_prob", 0.0),
                         eval_reverse_complement=data.get("eval_reverse_complement", False))
        self.counts = {split: len(ds) for split, ds in self.datasets.items()}
        if is_main_process:
            write_text_atomic(Path(run_dir) / "split_manifest.json", json.dumps({
                "source": "labelled", "train": str(data["train"]), "val": str(data.get("val")),
                "test": str(data.get("test")), "val_fraction": None if data.get("val") else data["val_fraction"],
                "seed": seed, "samples": self.counts}, indent=2, default=str))

    def training_sequences(self) -> Iterable[str]:
        """The training sequences, for training a tokenizer from scratch."""
        return (self.datasets["train"][i][0] for i in range(len(self.datasets["train"])))
