"""Genome windows -> tokenized, masked MLM batches, as a Lightning DataModule.

Set-up happens once, in the launching process, before any DataLoader worker or DDP rank starts:
the FASTA is prepared and indexed, the splits resolved, the tokenizer loaded or trained on the
train split, and the split manifest written to the run directory.
"""

from __future__ import annotations

import logging
import math
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader

from bigbird_dna.data.genome import prepare_genome, Genome
from bigbird_dna.data.splits import Region, resolve_splits, write_split_manifest
from bigbird_dna.data.windows import GenomeWindows
from bigbird_dna.errors import InputError
from bigbird_dna.tasks.masking import mask_tokens
from bigbird_dna.tokenizer import DNATokenizer, sample_training_chunks, train_bpe_tokenizer

log = logging.getLogger(__name__)


class MLMCollator:
    """Tokenize window strings into ``[CLS] tokens [SEP]``, pad, and mask.

    Batches are dicts of ``input_ids``, ``labels`` (``[B, T]`` int64), ``attention_mask``
    (``[B, T]`` bool, True for real tokens), and ``num_bases``/``num_tokens`` (scalars), from which
    bits per base is computed. With ``fixed_masks`` (validation), a batch's masks depend only on
    its windows and the seed, so every validation pass scores the same positions.
    """

    def __init__(self, tokenizer: DNATokenizer, max_tokens: int, mask_prob: float,
                 fixed_masks: bool = False, seed: int = 0):
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.mask_prob = mask_prob
        self.fixed_masks = fixed_masks
        self.seed = seed
        # Tokens made only of N are never masked: predicting N from N teaches nothing (Caduceus
        # keeps N out of the MLM loss too).
        self.unmaskable_ids = torch.tensor(sorted(tokenizer.special_ids | tokenizer.n_run_ids))

    def tokenize(self, seqs: list[str]) -> tuple[torch.Tensor, int, int]:
        """Returns ``(ids [B, T], bases covered, real tokens)`` for a list of sequences."""
        encoded = self.tokenizer.encode_batch(seqs)
        bases = sum(len(s) for s in seqs)
        tokens = sum(len(e) for e in encoded)
        body = self.max_tokens - 2
        if any(len(e) > body for e in encoded):
            bases = sum(round(len(s) * min(1.0, body / max(len(e), 1))) for s, e in zip(seqs, encoded))
            tokens = sum(min(len(e), body) for e in encoded)
        rows = [[self.tokenizer.cls_id, *e[:body], self.tokenizer.sep_id] for e in encoded]
        ids = torch.full((len(rows), max(map(len, rows))), self.tokenizer.pad_id, dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
        return ids, bases, tokens

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
        ids, bases, tokens = self.tokenize([item["seq"] for item in items])
        generator = None
        if self.fixed_masks:
            key = f"{self.seed}|" + "|".join(f"{i['record']}:{i['start']}" for i in items)
            generator = torch.Generator().manual_seed(zlib.crc32(key.encode()))
        inputs, labels = mask_tokens(ids, self.unmaskable_ids, self.tokenizer.mask_id,
                                     self.tokenizer.vocab_size, self.mask_prob, generator)
        return {
            "input_ids": inputs,
            "labels": labels,
            "attention_mask": ids != self.tokenizer.pad_id,
            "num_bases": torch.tensor(bases, dtype=torch.float64),
            "num_tokens": torch.tensor(tokens, dtype=torch.float64),
        }


def unigram_entropy(tokenizer: DNATokenizer, seqs: list[str]) -> float:
    """Entropy in nats of the token frequencies of ``seqs``: the loss of a model that ignores context."""
    counts = Counter(token for ids in tokenizer.encode_batch(seqs) for token in ids)
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values())


def _regions_as_tuples(regions: list[Region]) -> list[tuple[str, int, int]]:
    return [(r.record, r.start, r.end) for r in regions]


class GenomeMLMDataModule(L.LightningDataModule):
    """MLM data from one genome FASTA.

    Args:
        data: the ``data`` config group (fasta, window_bp, splits, windows per epoch, loaders).
        tokenizer: the ``tokenizer`` config group (path or training settings).
        max_tokens: model context, including [CLS] and [SEP].
        mask_prob: MLM selection rate.
        seed: run seed.
        run_dir: where the manifest and ``tokenizer.json`` go.
        is_main_process: only the main process (rank 0) writes files.
    """

    def __init__(self, data: dict, tokenizer: dict, max_tokens: int, mask_prob: float, seed: int,
                 run_dir: str | Path, is_main_process: bool = True):
        super().__init__()
        self.cfg = data
        self.tokenizer_cfg = tokenizer
        self.max_tokens = max_tokens
        self.mask_prob = mask_prob
        self.seed = seed
        self.run_dir = Path(run_dir)
        self.is_main_process = is_main_process

        self.fasta = prepare_genome(data["fasta"], data.get("cache_dir"))
        with Genome(self.fasta) as genome:
            lengths = genome.record_lengths
        self.splits = resolve_splits(lengths, data.get("train_records"), list(data.get("val_records") or []),
                                     list(data.get("test_records") or []), data["holdout_fraction"],
                                     min_length=data["window_bp"])
        self.tokenizer = self._load_or_train_tokenizer()
        self.datasets = {name: self._windows(name) for name in ("train", "val", "test")}
        self.val_unigram_entropy = unigram_entropy(self.tokenizer, [w["seq"] for w in self.datasets["val"]])
        self.val_bp_per_token = self.tokenizer.bp_per_token([w["seq"] for w in self.datasets["val"]])
        if is_main_process:
            write_split_manifest(self.run_dir / "split_manifest.json", self.splits, str(data["fasta"]), {
                "window_bp": data["window_bp"], "seed": seed, "tokenizer_sha256": self.tokenizer.sha256,
                "indexed_copy": str(self.fasta)})

    def _load_or_train_tokenizer(self) -> DNATokenizer:
        given = self.tokenizer_cfg.get("path")
        in_run_dir = self.run_dir / "tokenizer.json"
        if given:
            tokenizer = DNATokenizer.load(given)
        elif in_run_dir.exists():  # a DDP rank re-entering the run, or a resumed run
            tokenizer = DNATokenizer.load(in_run_dir)
        else:
            log.info("Training a BPE tokenizer on %s bp of the train split", self.tokenizer_cfg["sample_bp"])
            chunks = sample_training_chunks(self.fasta, _regions_as_tuples(self.splits["train"]),
                                            total_bp=self.tokenizer_cfg["sample_bp"], seed=self.seed,
                                            uppercase=self.cfg["uppercase"])
            tokenizer = train_bpe_tokenizer(chunks, vocab_size=self.tokenizer_cfg["vocab_size"],
                                            max_token_length=self.tokenizer_cfg["max_token_length"])
        if self.is_main_process and not in_run_dir.exists():
            tokenizer.save(in_run_dir)
        return tokenizer

    def _windows(self, split: str) -> GenomeWindows:
        train = split == "train"
        return GenomeWindows(
            self.fasta, self.splits[split], window_bp=self.cfg["window_bp"],
            num_windows=self.cfg["windows_per_epoch"] if train else self.cfg["eval_windows"],
            seed=self.seed + {"train": 0, "val": 1, "test": 2}[split],
            max_ambiguous_fraction=self.cfg["max_n_fraction"], uppercase=self.cfg["uppercase"],
            reverse_complement_prob=self.cfg["reverse_complement_prob"] if train else 0.0,
            fixed=not train,
        )

    def _loader(self, split: str) -> DataLoader:
        collator = MLMCollator(self.tokenizer, self.max_tokens, self.mask_prob,
                               fixed_masks=split != "train", seed=self.seed)
        workers = self.cfg["num_workers"]
        return DataLoader(self.datasets[split], batch_size=self.cfg["batch_size"], collate_fn=collator,
                          num_workers=workers, persistent_workers=workers > 0 and split != "train")

    def train_dataloader(self) -> DataLoader:
        # Called again every epoch (trainer.reload_dataloaders_every_n_epochs=1): workers are
        # re-forked with the new epoch, so each epoch draws fresh windows.
        if self.trainer is not None:
            self.datasets["train"].set_epoch(self.trainer.current_epoch)
        return self._loader("train")

    def val_dataloader(self) -> DataLoader:
        return self._loader("val")

    def test_dataloader(self) -> DataLoader:
        return self._loader("test")
