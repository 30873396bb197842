"""Labelled sequences for classification: a Dataset of ``(seq, labels)`` and the collator that
tokenizes them into ``[CLS] tokens [SEP]`` batches.

Shared by every sequence-classification task (promoters, chromatin profiles, generic labelled
files) and by ``predict``, so training and inference tokenize exactly the same way.

Sequences may have any length, including fewer tokens than one attention block: a batch is padded
to its own longest row only, and the encoder falls back to dense attention for short inputs.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset

from bigbird_dna.data.loaders import (
    DropsFullPaddingMasks,
    ResumableMapLoader,
    ResumesMidEpoch,
    check_loader_settings,
    ignore_stop_signals,
    pins_memory,
)
from bigbird_dna.errors import InputError
from bigbird_dna.genome.sampling import first_bases
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials


class LabelledSequences(Dataset):
    """In-memory ``(seq, labels)`` items; ``labels`` is a float32 vector ``[num_labels]``.

    Args:
        seqs: DNA strings.
        labels: ``[N]`` (one binary label) or ``[N, num_labels]`` 0/1 values.
    """

    def __init__(self, seqs: Sequence[str], labels: Sequence | np.ndarray):
        labels = np.asarray(labels, dtype=np.float32)
        if labels.ndim == 1:
            labels = labels[:, None]
        if len(seqs) != len(labels):
            raise InputError(f"{len(seqs)} sequences but {len(labels)} labels; every sequence needs a label.")
        self.seqs = list(seqs)
        self.labels = labels  # [N, num_labels]

    @property
    def num_labels(self) -> int:
        return self.labels.shape[1]

    def __len__(self) -> int:
        return len(self.seqs)

    def __getitem__(self, index: int) -> tuple[str, np.ndarray]:
        return self.seqs[index], self.labels[index]


class RandomStrand(Dataset):
    """The items of ``dataset`` with each sequence reverse-complemented with probability ``prob``.

    RC augmentation for classifiers whose label holds on both strands (a promoter read on its
    minus strand is still a promoter region). The draw is fixed per item by ``seed`` (give a new seed
    each epoch), so it is the same with any number of loader workers and on a resumed run.
    """

    def __init__(self, dataset: Dataset, prob: float, seed: int):
        self.dataset = dataset
        self.flip = np.random.default_rng(seed).random(len(dataset)) < prob  # [N]

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, index: int) -> tuple[str, np.ndarray]:
        seq, labels = self.dataset[index]
        return (reverse_complement(seq) if self.flip[index] else seq), labels


class LabelledSequenceCollator:
    """Batch ``(seq, labels)`` items into model inputs.

    Returns dicts of ``input_ids [B, T]`` int64 (``[CLS] seq [SEP]``, pad id 0 on the right, cut to
    ``max_tokens``), ``attention_mask [B, T]`` bool (True for real tokens) and ``labels
    [B, num_labels]`` float32. With ``both_strands``, also ``rc_input_ids [B, T']`` and
    ``rc_attention_mask [B, T']``: the reverse complements, tokenized the same way (under BPE or
    k-mers the two strands may take different numbers of tokens).
    """

    def __init__(self, tokenizer: DNATokenizer, max_tokens: int, both_strands: bool = False):
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.both_strands = both_strands

    def __call__(self, items: Sequence[tuple[str, np.ndarray]]) -> dict[str, torch.Tensor]:
        seqs, labels = zip(*items)
        input_ids, attention_mask, _ = encode_with_specials(self.tokenizer, seqs, self.max_tokens)
        batch = {"input_ids": input_ids, "attention_mask": attention_mask,
                 "labels": torch.as_tensor(np.stack(labels), dtype=torch.float32)}
        if self.both_strands:
            rc_ids, rc_mask, _ = encode_with_specials(self.tokenizer, [reverse_complement(s) for s in seqs],
                                                      self.max_tokens)
            batch.update(rc_input_ids=rc_ids, rc_attention_mask=rc_mask)
        return batch


class LabelledDataModule(DropsFullPaddingMasks, ResumesMidEpoch, L.LightningDataModule):
    """Train/val/test datasets of ``(seq, labels)`` items, batched by :class:`LabelledSequenceCollator`.

    The tokenizer is attached after construction (:meth:`attach_tokenizer`), because a model
    trained from scratch may first need the training sequences to train one.

    Args:
        datasets: ``{"train": ..., "val": ..., "test": ...}``; ``test`` may be missing or empty.
        batch_size: sequences per batch (per device).
        num_workers: DataLoader worker processes.
        seed: seeds the order of training batches.
        label_kind: ``binary``, ``multiclass`` (one-hot labels ``[N, C]``) or ``multilabel``;
            ``None``: ``binary`` for one label column, else ``multilabel``.
        baselines: the ``data.baselines`` settings of the k-mer LR and small-CNN baselines
            (:mod:`bigbird_dna.evaluation.baselines`; ``None``: defaults).
        reverse_complement_prob: share of training sequences read on the other strand each epoch
            (:class:`RandomStrand`); validation and test are never flipped. 0 = off.
        eval_reverse_complement: score validation and test sequences on both strands and average
            the two probabilities, as ``predict`` does by default (``--strands both``).
    """

    def __init__(self, datasets: dict[str, Dataset], batch_size: int, num_workers: int, seed: int,
                 label_kind: str | None = None, baselines: dict | None = None, reverse_complement_prob: float = 0.0,
                 eval_reverse_complement: bool = False):
        super().__init__()
        check_loader_settings(batch_size, num_workers)
        if not 0.0 <= reverse_complement_prob <= 1.0:
            raise InputError(f"data.reverse_complement_prob={reverse_complement_prob} must be between 0 and 1.")
        self.reverse_complement_prob = float(reverse_complement_prob)
        self.eval_reverse_complement = bool(eval_reverse_complement)
        for split in ("train", "val"):
            if split not in datasets or len(datasets[split]) == 0:
                raise InputError(f"the {split} split has no sequences; check the data paths and split settings.")
        self.datasets = datasets
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.seed = seed
        self.tokenizer: DNATokenizer | None = None
        self.max_tokens = 0
        self.label_kind = label_kind
        self.baselines = dict(baselines or {})
        self.resume_position: dict[int, int] = {}  # {epoch: batches} a resumed run skips (ResumesMidEpoch)

    def training_sequences(self) -> Iterable[str]:
        """Training sequences to train a tokenizer on, in a fixed order; subclasses say which."""
        raise NotImplementedError

    def training_text(self, total_bp: int) -> Iterable[str]:
        """The first ``total_bp`` bases of :meth:`training_sequences`."""
        return first_bases(self.training_sequences(), total_bp)

    def training_sample(self, limit: int = 2000, keep: int = 64) -> list[str]:
        """The ``keep`` longest of the first ``limit`` training sequences (none for data that cannot be
        indexed), to settle the model's default prediction window
        (:func:`~bigbird_dna.training.export_record.training_window`)."""
        dataset = self.datasets["train"]
        if not hasattr(dataset, "__getitem__") or not len(dataset):
            return []
        return sorted((dataset[i][0] for i in range(min(len(dataset), limit))), key=len)[-keep:]

    def has_test_data(self) -> bool:
        """Whether there is a test split to evaluate."""
        return len(self.datasets.get("test") or ()) > 0

    def task_inputs(self) -> dict:
        """Constructor arguments of the task that come from the data (none here)."""
        return {}

    @property
    def label_kind(self) -> str:
        """``binary``, ``multiclass`` or ``multilabel``: set, or derived from the label columns."""
        if self._label_kind is not None:
            return self._label_kind
        dataset = self.datasets["train"]
        num_labels = getattr(self, "num_labels", None) or getattr(dataset, "num_labels", None)
        if num_labels is None:
            num_labels = len(np.asarray(dataset[0][1]).reshape(-1))
        return "binary" if num_labels == 1 else "multilabel"

    @label_kind.setter
    def label_kind(self, kind: str | None) -> None:
        self._label_kind = kind

    def attach_tokenizer(self, tokenizer: DNATokenizer, max_tokens: int) -> None:
        """Tokenize with ``tokenizer`` into at most ``max_tokens`` tokens (model context)."""
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens

    def _loader(self, split: str, shuffle: bool) -> DataLoader:
        if self.tokenizer is None:
            raise RuntimeError("attach_tokenizer() must be called before the data loaders are built")
        generator, dataset = None, self.datasets[split]
        epoch = self.trainer.current_epoch if self.trainer is not None else 0
        if shuffle:  # a new order each epoch (loaders are rebuilt every epoch), reproducible from the seed
            generator = torch.Generator().manual_seed(self.seed + epoch)
            if split == "train" and self.reverse_complement_prob > 0:
                dataset = RandomStrand(dataset, self.reverse_complement_prob, seed=(self.seed, epoch, 1))
        settings = dict(batch_size=self.batch_size, shuffle=shuffle, generator=generator, num_workers=self.num_workers,
                        worker_init_fn=ignore_stop_signals, pin_memory=pins_memory(self.trainer),
                        collate_fn=LabelledSequenceCollator(
                            self.tokenizer, self.max_tokens,
                            both_strands=split != "train" and self.eval_reverse_complement))
        if split == "train":  # resumable mid-epoch: a stopped fine-tune goes on with the batches not yet trained
            return ResumableMapLoader(dataset, epoch=epoch, pending=self.resume_position, **settings)
        return DataLoader(dataset, **settings)

    def train_dataloader(self) -> DataLoader:
        return self._loader("train", shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return self._loader("val", shuffle=False)

    def test_dataloader(self) -> DataLoader:
        if len(self.datasets.get("test") or ()) == 0:
            raise InputError("this data has no test split; give one (data.test=... or data.test_records=[...]).")
        return self._loader("test", shuffle=False)
