"""Genome windows -> tokenized, masked MLM batches, as a Lightning DataModule.

Set-up happens once, in the launching process, before any DataLoader worker or DDP rank starts:
the genome is opened and prepared (:func:`~bigbird_dna.genome.open_genome`), the splits
resolved, the tokenizer loaded or trained on the train split, and the split manifest written to
the run directory. DDP ranks other than 0 write nothing: they wait for the run directory's
``tokenizer.json`` from rank 0 (already there when Lightning starts them; under ``srun`` every
rank starts at once) and load it, never training their own.

The train loader is resumable: its ``state_dict`` (saved by Lightning in every checkpoint) holds
the epoch and the number of batches this epoch already consumed, and a run restarted from that
checkpoint skips exactly those windows (:meth:`GenomeWindows.resume_at`). Training masks are
seeded per window from ``(seed, epoch, window index)``, and no loader touches the global torch
RNG, so a resumed run continues with the same windows and masks as an uninterrupted one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

import lightning as L
import torch
from torch.utils.data import DataLoader

from bigbird_dna.data.loaders import (
    DropsFullPaddingMasks,
    ResumableLoader,
    batches_done,
    check_loader_settings,
    ignore_stop_signals,
    loader_generator,
    pins_memory,
    wait_for_file,
)
from bigbird_dna.data.mlm.collator import MLMCollator
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.genome.splits import resolve_splits, write_split_manifest
from bigbird_dna.genome.tiles import TiledWindows
from bigbird_dna.genome.windows import GenomeWindows
from bigbird_dna.runtime.phases import counted, phase
from bigbird_dna.tokenizer import DNATokenizer

log = logging.getLogger(__name__)


def token_counts(tokenizer: DNATokenizer, seqs: list[str]) -> torch.Tensor:
    """How often each token id occurs in ``seqs``: int64 ``[vocab_size]``."""
    ids = [token for encoded in tokenizer.encode_batch(seqs) for token in encoded]
    return torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=tokenizer.vocab_size)


class GenomeMLMDataModule(DropsFullPaddingMasks, L.LightningDataModule):
    """MLM data from one genome FASTA (``conf/data/genome.yaml``).

    Set up in two steps: the constructor prepares the genome, resolves the splits and builds the
    window samplers; :meth:`attach_tokenizer` (once the run's tokenizer is known, see
    :mod:`bigbird_dna.tokenizer.provision`) writes the split manifest and counts tokens.

    Args:
        fasta: the genome file (:func:`~bigbird_dna.genome.open_genome`: plain, gzip or bgzip FASTA).
        window_bp: bases per window.
        seed: run seed (windows, masks).
        run_dir: where the split manifest goes.
        is_main_process: only the main process (rank 0) writes files.
        mask_prob: MLM selection rate of the train windows (80/10/10).
        mask_span: train tokens per masked run (1: single tokens, as BERT; more: SpanBERT's runs,
            :func:`~bigbird_dna.data.mlm.masking.mask_tokens`). Val/test always mask single tokens.
        eval_mask_prob: selection rate of the val/test windows, all replaced by [MASK] and scored
            (``None`` = ``mask_prob``). Training may mask more than evaluation scores, for more
            supervised positions per step; the honest metrics and baselines stay at this rate.
        cache_dir: where plain-gzip FASTAs are decompressed once.
        train_records, val_records, test_records, holdout_fraction, holdout_records: the splits
            (:func:`~bigbird_dna.genome.splits.resolve_splits`; ``holdout_records`` drawn with ``seed``).
        max_n_fraction: windows with a larger share of N/IUPAC codes are skipped.
        reverse_complement_prob: RC augmentation of train windows.
        windows_per_epoch: train windows per epoch, across ranks and workers.
        eval_windows: at most this many val/test windows; they tile the held-out regions.
        eval_stride_bp: the tiling stride (``None`` = ``window_bp``: every held-out base once).
        baseline_max_bp, baseline_max_order: train bases and k-mer orders of the baselines
            (:mod:`bigbird_dna.evaluation.kmer_chains`).
        batch_size: windows per batch, per device.
        num_workers: DataLoader workers.
    """

    def __init__(self, fasta: str, window_bp: int, seed: int, run_dir: str | Path, is_main_process: bool = True,
                 mask_prob: float = 0.15, eval_mask_prob: float | None = None, mask_span: int = 1,
                 cache_dir: str | None = None, train_records: list[str] | None = None,
                 val_records: list[str] | None = None, test_records: list[str] | None = None,
                 holdout_fraction: float = 0.05, holdout_records: float | None = None, max_n_fraction: float = 0.1,
                 reverse_complement_prob: float = 0.5, windows_per_epoch: int = 4096, eval_windows: int = 4096,
                 eval_stride_bp: int | None = None, baseline_max_bp: int = 20_000_000, baseline_max_order: int = 10,
                 batch_size: int = 8, num_workers: int = 1):
        super().__init__()
        check_loader_settings(batch_size, num_workers)
        self.cfg = {"fasta": fasta, "window_bp": window_bp, "max_n_fraction": max_n_fraction,
                    "reverse_complement_prob": reverse_complement_prob, "windows_per_epoch": windows_per_epoch,
                    "eval_windows": eval_windows, "eval_stride_bp": eval_stride_bp,
                    "baseline_max_bp": baseline_max_bp, "baseline_max_order": baseline_max_order,
                    "batch_size": batch_size, "num_workers": num_workers}
        self.mask_prob = mask_prob
        self.eval_mask_prob = mask_prob if eval_mask_prob is None else eval_mask_prob
        if not (isinstance(mask_span, int) and mask_span >= 1):
            raise InputError(f"data.mask_span={mask_span} must be a token count >= 1 (1: single tokens, as BERT).")
        self.mask_span = mask_span
        self.seed = seed
        self.run_dir = Path(run_dir)
        self.is_main_process = is_main_process
        self.tokenizer: DNATokenizer | None = None
        self.max_tokens = 0
        if not is_main_process:
            # Rank 0 prepares the genome (index, decompressed copy) and the tokenizer first.
            wait_for_file(self.run_dir / "tokenizer.json")

        self.genome = open_genome(fasta, cache_dir)
        self.splits = resolve_splits(self.genome.record_lengths, train_records, list(val_records or []),
                                     list(test_records or []), holdout_fraction, min_length=window_bp,
                                     holdout_records=holdout_records, seed=seed)
        self.datasets = {name: self._windows(name) for name in ("train", "val", "test")}

    def training_text(self, total_bp: int) -> Iterator[str]:
        """Random chunks of the train split, about ``total_bp`` bases, to train a tokenizer on."""
        return sample_training_chunks(self.genome, self.splits["train"], total_bp=total_bp, seed=self.seed)

    def attach_tokenizer(self, tokenizer: DNATokenizer, max_tokens: int) -> None:
        """Tokenize with ``tokenizer`` into at most ``max_tokens`` tokens (model context, with
        [CLS] and [SEP]); count the tokens the reference metrics and the output prior need."""
        self.tokenizer, self.max_tokens = tokenizer, max_tokens
        # A sample of train windows (fixed, seeded): token frequencies for the MLM output prior.
        prior_sample = GenomeWindows(self.genome, self.splits["train"], window_bp=self.cfg["window_bp"],
                                     num_windows=min(256, self.cfg["windows_per_epoch"]), seed=self.seed + 3,
                                     max_ambiguous_fraction=self.cfg["max_n_fraction"], fixed=True)
        self.window_sample = [w["seq"] for w in prior_sample]
        self.train_token_counts = token_counts(tokenizer, self.window_sample)
        if self.is_main_process:
            write_split_manifest(self.run_dir / "split_manifest.json", self.splits, str(self.cfg["fasta"]), {
                "window_bp": self.cfg["window_bp"], "seed": self.seed, "tokenizer_sha256": tokenizer.sha256,
                "indexed_copy": str(self.genome.indexed_path)})

    def training_sample(self) -> list[str]:
        """Train windows like those the model trains on (a fixed sample), to settle its default
        prediction window (:func:`~bigbird_dna.training.export_record.training_window`)."""
        return self.window_sample

    def has_test_data(self) -> bool:
        """Whether the test split holds any region."""
        return bool(self.splits["test"])

    def task_inputs(self) -> dict[str, Any]:
        """Constructor arguments of the task that come from the data: the train token counts."""
        return {"token_counts": self.train_token_counts}

    def _windows(self, split: str) -> GenomeWindows | TiledWindows:
        """Train: random windows, drawn anew every epoch. Val/test: fixed tiles of the held-out regions."""
        if split != "train":
            with phase("tiling") as timing:
                tiles = TiledWindows(self.genome, self.splits[split], window_bp=self.cfg["window_bp"],
                                     stride_bp=self.cfg["eval_stride_bp"], max_windows=self.cfg["eval_windows"])
                regions = counted(len(self.splits[split]), "region")
                timing.detail = f"{split}: {counted(len(tiles), 'window')} over {regions}"
            return tiles
        return GenomeWindows(
            self.genome, self.splits["train"], window_bp=self.cfg["window_bp"],
            num_windows=self.cfg["windows_per_epoch"], seed=self.seed,
            max_ambiguous_fraction=self.cfg["max_n_fraction"],
            reverse_complement_prob=self.cfg["reverse_complement_prob"],
        )

    def _loader(self, split: str) -> DataLoader:
        epoch = self.datasets[split].epoch
        rate = self.mask_prob if split == "train" else self.eval_mask_prob
        collator = MLMCollator(self.tokenizer, self.max_tokens, rate, fixed_masks=split != "train", seed=self.seed,
                               epoch=epoch, mask_span=self.mask_span)
        workers = self.cfg["num_workers"]
        # An own generator: creating the loader's iterator then leaves the global torch RNG (dropout)
        # alone, so a resumed run draws the same dropout masks as an uninterrupted one.
        generator = loader_generator(self.seed, epoch)
        kwargs = dict(batch_size=self.cfg["batch_size"], collate_fn=collator, num_workers=workers,
                      persistent_workers=workers > 0 and split != "train", generator=generator,
                      worker_init_fn=ignore_stop_signals, pin_memory=pins_memory(self.trainer))
        if split != "train":
            return DataLoader(self.datasets[split], **kwargs)
        return ResumableLoader(self.datasets[split], position=lambda: batches_done(self.trainer), epoch=epoch,
                               **kwargs)

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
