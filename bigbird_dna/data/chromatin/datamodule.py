"""Chromatin-profile data as a Lightning DataModule, from the DeepSEA bundle or from intervals + FASTA.

Every item is ``(seq, labels [num_labels] float32, index)``; batches carry ``index [B]`` next to the
:class:`~bigbird_dna.data.labelled.LabelledSequenceCollator` fields, so evaluation can put
predictions back in file order (across DataLoader workers and DDP ranks) and average the forward and
reverse-complement rows listed in :attr:`ChromatinDataModule.rc_pairs`.

- :class:`DeepSEAData` (``conf/data/deepsea.yaml``): :class:`DeepSEASamples` streams a
  :class:`~bigbird_dna.data.chromatin.deepsea.DeepSEAFile` in slabs of ``chunk_size`` samples. Training
  shuffles the slab order every epoch and the rows inside each slab (a block shuffle: random rows
  of a 17 GB HDF5 file would cost one strided read each).
- :class:`IntervalData` (``conf/data/chromatin_intervals.yaml``): windows of ``context_bp``
  around labelled bins, split by chromosome (:mod:`bigbird_dna.data.chromatin.intervals`).
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
from torch.utils.data import DataLoader, IterableDataset

from bigbird_dna.data.chromatin.deepsea import DeepSEAFile, detect_rc_layout, rc_pairs
from bigbird_dna.data.chromatin.intervals import (
    IntervalWindows,
    read_labelled_intervals,
    split_by_record,
)
from bigbird_dna.data.chromatin.onehot import decode_onehot
from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequenceCollator
from bigbird_dna.data.loaders import (
    ResumableLoader,
    batches_done,
    ignore_stop_signals,
    loader_generator,
    pins_memory,
)
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.intervals import check_intervals
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.runtime.atomic import write_text_atomic
from bigbird_dna.runtime.shards import current_shard

log = logging.getLogger(__name__)


class DeepSEASamples(IterableDataset):
    """The samples of one DeepSEA file as ``(seq, labels, index)``, read ``chunk_size`` at a time.

    Training (``shuffle=True``): slabs go to ranks in a per-epoch random order, every rank yields the
    same number of samples (so DDP ranks end their epoch together), and rows are shuffled inside each
    slab. Evaluation: each rank reads a contiguous ``ceil(N / world_size)`` range, the last one
    wrapping to the file start (as ``DistributedSampler`` pads); duplicates share their ``index``.
    Slabs are dealt to DataLoader workers round-robin.

    **Resuming mid-epoch** (:meth:`resume_at`, driven by
    :class:`~bigbird_dna.data.loaders.ResumableLoader`): a slab's row order and augmentation come
    from its own stream ``(seed, epoch, slab start)``, so the batches a rank already consumed are
    skipped without reading them, and a resumed run sees the samples an uninterrupted one would.
    As for the MLM windows, workers are rotated to continue the round-robin where it stopped
    (:func:`~bigbird_dna.runtime.shards.current_shard`).
    """

    def __init__(self, file: DeepSEAFile, chunk_size: int = 1024, shuffle: bool = False, seed: int = 0,
                 reverse_complement_prob: float = 0.0):
        super().__init__()
        if chunk_size < 1 or not 0.0 <= reverse_complement_prob <= 1.0:
            raise InputError(f"data.chunk_size={chunk_size} must be positive and data.reverse_complement_prob="
                             f"{reverse_complement_prob} in [0, 1].")
        self.file = file
        self.chunk_size = chunk_size
        self.shuffle = shuffle
        self.seed = seed
        self.reverse_complement_prob = reverse_complement_prob
        self.epoch = 0
        self._resume = (0, 0)

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def resume_at(self, batches: int, batch_size: int) -> None:
        """Make the next :meth:`__iter__` skip the first ``batches`` batches of ``batch_size``
        samples this rank's DataLoader yields in the current epoch; ``resume_at(0, 0)`` clears it."""
        self._resume = (batches, batch_size)

    def _slabs(self, rank: int, world_size: int) -> list[tuple[int, int]]:
        n, size = len(self.file), self.chunk_size
        if not self.shuffle:
            per = math.ceil(n / world_size)
            lo, hi = rank * per, (rank + 1) * per
            # [lo, hi) may run past n: the overhang wraps to the start of the file
            pieces = [(lo, min(hi, n))] + ([(0, hi - n)] if hi > n else [])
            return [(a, min(a + size, b)) for p, b in pieces for a in range(p, b, size)]
        slabs = [(a, min(a + size, n)) for a in range(0, n, size)]
        order = np.random.default_rng([self.seed, self.epoch]).permutation(len(slabs))
        per_rank = [[slabs[k] for k in order[r::world_size]] for r in range(world_size)]
        quota = min(sum(b - a for a, b in mine) for mine in per_rank)
        kept, total = [], 0
        for a, b in per_rank[rank]:
            if total >= quota:
                break
            kept.append((a, min(b, a + quota - total)))
            total += kept[-1][1] - a
        return kept

    def __len__(self) -> int:
        shard = current_shard()
        return sum(b - a for a, b in self._slabs(shard.rank, shard.world_size))

    def __iter__(self) -> Iterator[tuple[str, np.ndarray, int]]:
        # The resume position is read now, not at the first sample: a ResumableLoader clears it
        # as soon as its iterator exists, before a loader without workers draws anything.
        return self._samples(*self._resume)

    def _samples(self, batches: int, batch_size: int) -> Iterator[tuple[str, np.ndarray, int]]:
        shard = current_shard(batches, batch_size)
        skip = shard.skip
        for start, stop in self._slabs(shard.rank, shard.world_size)[shard.worker::shard.workers]:
            if skip >= stop - start:
                skip -= stop - start
                continue
            yield from self._slab(start, stop, skip)
            skip = 0

    def _slab(self, start: int, stop: int, skip: int) -> Iterator[tuple[str, np.ndarray, int]]:
        seqs, labels = self.file.read_sequences(start, stop)
        rng = np.random.default_rng([self.seed, self.epoch, start])
        rows = rng.permutation(len(seqs)) if self.shuffle else np.arange(len(seqs))
        flips = rng.random(len(seqs)) < self.reverse_complement_prob  # [n], by position in the slab order
        for row, flip in list(zip(rows, flips))[skip:]:
            yield (reverse_complement(seqs[row]) if flip else seqs[row]), labels[row], start + int(row)


class IndexedCollator:
    """:class:`LabelledSequenceCollator` for ``(seq, labels, index)`` items: adds ``index [B]`` int64."""

    def __init__(self, tokenizer, max_tokens: int):
        self.inner = LabelledSequenceCollator(tokenizer, max_tokens)

    def __call__(self, items: list[tuple[str, np.ndarray, int]]) -> dict[str, torch.Tensor]:
        batch = self.inner([(seq, labels) for seq, labels, _ in items])
        batch["index"] = torch.tensor([index for *_, index in items], dtype=torch.long)
        return batch


class ChromatinDataModule(LabelledDataModule):
    """Train/val(/test) chromatin-profile samples, tokenized by the attached tokenizer. Use a
    subclass: :class:`DeepSEAData` or :class:`IntervalData`.

    Args:
        num_labels: labels per sample the task expects; files that disagree are refused.
        seed: run seed (shuffling, augmentation).
        run_dir: where ``split_manifest.json`` goes.
        is_main_process: only the main process writes files.
        **data: the settings of the ``data`` config group.

    Attributes:
        rc_pairs: ``{"val": [P, 2], "test": [P, 2]}`` row indices (forward, reverse complement)
            whose predictions are averaged at evaluation.
        label_names: names of the labels when the data has them, else ``None``.
    """

    source = ""

    def __init__(self, num_labels: int, seed: int, run_dir: str | Path, is_main_process: bool = True,
                 **data: Any):
        self.cfg, self.num_labels = data, num_labels
        self.label_names: list[str] | None = None
        self.rc_pairs: dict[str, np.ndarray] = {}
        datasets, manifest = self._datasets(seed)
        super().__init__(datasets, data["batch_size"], data["num_workers"], seed, baselines=data.get("baselines"))
        if is_main_process:
            write_text_atomic(Path(run_dir) / "split_manifest.json",
                              json.dumps({"source": self.source, **manifest}, indent=2))

    def _datasets(self, seed: int) -> tuple[dict, dict]:
        """``({split: dataset}, manifest)``; sets ``rc_pairs`` and ``label_names``."""
        raise NotImplementedError

    def task_inputs(self) -> dict[str, Any]:
        """Constructor arguments of the task that come from the data."""
        return {"rc_pairs": self.rc_pairs, "data_label_names": self.label_names}

    def _datasets_deepsea(self, seed: int) -> tuple[dict, dict]:
        cfg = self.cfg
        if cfg.get("test") and not Path(cfg["test"]).expanduser().exists():
            log.warning("data.test=%s does not exist: training without a test split (give the bundle's "
                        "test.mat to evaluate one, or data.test=null to silence this).", cfg["test"])
            cfg = {**cfg, "test": None}
        files = {split: DeepSEAFile(cfg[split], self.num_labels, cfg.get("x_key"), cfg.get("y_key"))
                 for split in ("train", "val", "test") if cfg.get(split)}
        if "train" not in files or "val" not in files:
            raise InputError("data=deepsea needs data.train and data.val (the bundle's train.mat and "
                             "valid.mat; data.dir=<deepsea_train folder> sets all three).")
        datasets, manifest = {}, {}
        for split, file in files.items():
            train = split == "train"
            datasets[split] = DeepSEASamples(file, cfg["chunk_size"], shuffle=train, seed=seed,
                                             reverse_complement_prob=cfg["reverse_complement_prob"] if train else 0.0)
            layout = None if train else self._strand_layout(file)
            if not train:
                self.rc_pairs[split] = rc_pairs(len(file), layout)
            manifest[split] = {"file": str(file.path), "format": file.layout.format, "samples": len(file),
                               "seq_len": file.seq_len, "x_key": file.layout.x_key, "y_key": file.layout.y_key,
                               "strand_pairs": layout}
        return datasets, manifest

    def _strand_layout(self, file: DeepSEAFile) -> str | None:
        wanted = self.cfg.get("strand_pairs", "auto")
        if wanted == "auto":
            return detect_rc_layout(file, probes=self.cfg.get("rc_probes", 8))
        return None if wanted in (None, "none") else wanted

    def _datasets_intervals(self, seed: int) -> tuple[dict, dict]:
        cfg = self.cfg
        genome = open_genome(cfg["fasta"], cfg.get("cache_dir"))
        lengths = genome.record_lengths  # prepared here, before any DataLoader worker starts
        intervals = read_labelled_intervals(cfg["intervals"], self.num_labels, cfg["label_column"])
        check_intervals(intervals.bins(), lengths, cfg["context_bp"], cfg["pad_ends"], str(cfg["intervals"]))
        self.label_names = intervals.label_names
        splits = split_by_record(intervals, cfg["val_records"], cfg["test_records"], cfg.get("train_records"))
        datasets = {}
        for split, bins in splits.items():
            evaluation = split != "train"
            both = evaluation and cfg["eval_reverse_complement"]
            augment = 0.0 if evaluation else cfg["reverse_complement_prob"]
            datasets[split] = IntervalWindows(genome, bins, cfg["context_bp"], reverse_complement_prob=augment,
                                              both_strands=both)
            if evaluation:
                self.rc_pairs[split] = rc_pairs(len(datasets[split]), "halves" if both else None)
        manifest = {"intervals": str(cfg["intervals"]), "fasta": str(cfg["fasta"]), "context_bp": cfg["context_bp"],
                    **{split: {"records": sorted(set(bins.records)), "bins": len(bins)}
                       for split, bins in splits.items()}}
        return datasets, manifest

    def training_sequences(self) -> Iterator[str]:
        """Training sequences spread over the train split, for training a tokenizer."""
        train = self.datasets["train"]
        if isinstance(train, DeepSEASamples):
            n, step = len(train.file), 16
            for start in np.linspace(0, max(n - step, 0), num=max(1, min(256, n // step)), dtype=np.int64):
                x, _ = train.file.read(int(start), int(start) + step)  # 256 slabs spread over the file
                yield from decode_onehot(x)
        else:
            for index in np.linspace(0, len(train) - 1, num=min(len(train), 4096), dtype=np.int64):
                yield train[int(index)][0]

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        """As the base's, with ``index`` in every batch; a DeepSEA stream shuffles its own slabs."""
        if self.tokenizer is None:
            raise RuntimeError("attach_tokenizer() must be called before the data loaders are built")
        dataset = self.datasets[split]
        epoch = self.trainer.current_epoch if self.trainer is not None else 0
        # An own generator (also for worker seeds): building the iterator leaves the global torch RNG,
        # and so dropout, as it is.
        kwargs = {"batch_size": self.batch_size, "num_workers": self.num_workers,
                  "collate_fn": IndexedCollator(self.tokenizer, self.max_tokens),
                  "generator": loader_generator(self.seed, epoch), "worker_init_fn": ignore_stop_signals,
                  "pin_memory": pins_memory(self.trainer)}
        if isinstance(dataset, DeepSEASamples):  # shuffles its own slabs
            dataset.set_epoch(epoch)
            dataset.file.load()
            if split == "train":
                return ResumableLoader(dataset, position=lambda: batches_done(self.trainer), epoch=epoch,
                                       **kwargs)
            return DataLoader(dataset, **kwargs)
        return DataLoader(dataset, shuffle=shuffle, **kwargs)


class DeepSEAData(ChromatinDataModule):
    """The DeepSEA bundle's ``.mat`` files (``conf/data/deepsea.yaml``)."""

    source = "deepsea"
    _datasets = ChromatinDataModule._datasets_deepsea


class IntervalData(ChromatinDataModule):
    """Labelled bins plus a genome FASTA, windows centred on each bin (``conf/data/chromatin_intervals.yaml``)."""

    source = "intervals"
    _datasets = ChromatinDataModule._datasets_intervals
