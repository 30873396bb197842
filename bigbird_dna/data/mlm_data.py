"""Genome windows -> tokenized, masked MLM batches, as a Lightning DataModule.

Set-up happens once, in the launching process, before any DataLoader worker or DDP rank starts:
the FASTA is prepared and indexed, the splits resolved, the tokenizer loaded or trained on the
train split, and the split manifest written to the run directory. DDP ranks other than 0 write
nothing: they wait for the run directory's ``tokenizer.json`` from rank 0 (already there when
Lightning starts them; under ``srun`` every rank starts at once) and load it, never training
their own.

The train loader is resumable: its ``state_dict`` (saved by Lightning in every checkpoint) holds
the epoch and the number of batches this epoch already consumed, and a run restarted from that
checkpoint skips exactly those windows (:meth:`GenomeWindows.resume_at`). Training masks are
seeded per window from ``(seed, epoch, window index)``, and no loader touches the global torch
RNG, so a resumed run continues with the same windows and masks as an uninterrupted one.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import lightning as L
from lightning.pytorch.utilities import rank_zero_info
import torch
from torch.utils.data import DataLoader

from bigbird_dna.data.genome import prepare_genome, Genome
from bigbird_dna.data.markov_baseline import encode, select_and_fit
from bigbird_dna.data.mlm_baselines import score_baselines
from bigbird_dna.data.mlm_collator import MLMCollator
from bigbird_dna.data.splits import Region, resolve_splits, write_split_manifest
from bigbird_dna.data.tiled_windows import TiledWindows
from bigbird_dna.data.windows import GenomeWindows
from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer import DNATokenizer, sample_training_chunks, tokenizer_from_config

log = logging.getLogger(__name__)

# How long a DDP rank > 0 waits for rank 0 to write the run directory's tokenizer (rank 0 may be
# training it on a large genome).
RANK_WAIT_S = 3600.0


class ResumableLoader(DataLoader):
    """A train DataLoader over :class:`GenomeWindows` that Lightning can checkpoint and resume.

    Lightning saves ``state_dict()`` of every train loader that has one (the ``_Stateful``
    protocol) into the checkpoint's fit-loop state, and calls ``load_state_dict()`` on the
    rebuilt loader before iterating it when a run restarts from that checkpoint.

    Args:
        position: returns how many batches of the current epoch this rank has consumed (the
            trainer's batch progress; the loader's own count would include prefetched batches).
        epoch: the epoch this loader serves.
    """

    def __init__(self, dataset: GenomeWindows, *args, position=None, epoch: int = 0, **kwargs):
        super().__init__(dataset, *args, **kwargs)
        self._position = position
        self._epoch = epoch

    def state_dict(self) -> dict[str, int]:
        return {
            "epoch": self._epoch,
            "batches": int(self._position() if self._position else 0),
            "batch_size": int(self.batch_size or 0),
            "num_workers": self.num_workers,
            "world_size": _world_size(),
        }

    def load_state_dict(self, state: dict[str, int]) -> None:
        if state.get("epoch") != self._epoch or not state.get("batches"):
            return  # saved at an epoch's end: the new epoch starts from its first window
        saved = (state.get("batch_size"), state.get("num_workers"), state.get("world_size"))
        now = (self.batch_size, self.num_workers, _world_size())
        if saved != now:
            log.warning("Resuming with (batch size, workers, world size) %s instead of %s: skipping %d batches "
                        "keeps the epoch's length, but not exactly the windows of the interrupted run.",
                        now, saved, state["batches"])
        rank_zero_info(f"Resuming the train data of epoch {self._epoch} after its first {state['batches']} batches")
        self.dataset.resume_at(state["batches"], int(self.batch_size or 1))

    def __iter__(self):
        iterator = super().__iter__()  # the dataset's iterator (or its workers) exists now
        self.dataset.resume_at(0, 0)
        return iterator


def _world_size() -> int:
    return torch.distributed.get_world_size() if torch.distributed.is_available() and \
        torch.distributed.is_initialized() else 1


def _wait_for(path: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise InputError(f"waited {timeout_s:.0f} s for rank 0 to write {path}, in vain. Check rank 0's log; "
                             "every rank must use the same run directory (hydra.run.dir=...).")
        time.sleep(1.0)


def token_counts(tokenizer: DNATokenizer, seqs: list[str]) -> torch.Tensor:
    """How often each token id occurs in ``seqs``: int64 ``[vocab_size]``."""
    ids = [token for encoded in tokenizer.encode_batch(seqs) for token in encoded]
    return torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=tokenizer.vocab_size)


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
        if not is_main_process:
            # Rank 0 prepares the genome (index, decompressed copy) and the tokenizer first.
            _wait_for(self.run_dir / "tokenizer.json", RANK_WAIT_S)

        self.fasta = prepare_genome(data["fasta"], data.get("cache_dir"))
        with Genome(self.fasta) as genome:
            lengths = genome.record_lengths
        self.splits = resolve_splits(lengths, data.get("train_records"), list(data.get("val_records") or []),
                                     list(data.get("test_records") or []), data["holdout_fraction"],
                                     min_length=data["window_bp"])
        self.tokenizer = self._load_or_train_tokenizer()
        self.datasets = {name: self._windows(name) for name in ("train", "val", "test")}
        # A sample of train windows (fixed, seeded): token frequencies for the MLM output prior.
        prior_sample = GenomeWindows(self.fasta, self.splits["train"], window_bp=data["window_bp"],
                                     num_windows=min(256, data["windows_per_epoch"]), seed=seed + 3,
                                     max_ambiguous_fraction=data["max_n_fraction"], uppercase=data["uppercase"],
                                     fixed=True)
        self.train_token_counts = token_counts(self.tokenizer, [w["seq"] for w in prior_sample])
        self._baselines: dict[str, float] | None = None
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
            def chunks():
                log.info("Training a BPE tokenizer on %s bp of the train split", self.tokenizer_cfg["sample_bp"])
                return sample_training_chunks(self.fasta, _regions_as_tuples(self.splits["train"]),
                                              total_bp=self.tokenizer_cfg["sample_bp"], seed=self.seed,
                                              uppercase=self.cfg["uppercase"])
            tokenizer = tokenizer_from_config(self.tokenizer_cfg, chunks)
        if self.is_main_process and not in_run_dir.exists():
            tokenizer.save(in_run_dir)
        return tokenizer

    def baselines(self) -> dict[str, float]:
        """Unigram and k-mer baselines on the val and test tokens the MLM is scored on (computed
        once): ``{"val/baseline/markov_causal_bits_per_base": ..., "markov_causal_order": ...}``."""
        if self._baselines is None:
            codes = [encode(seq) for seq in self._train_sequences()]
            models, out = {}, {}
            for kind, orders in (("causal", range(0, self.cfg.get("baseline_max_order", 10) + 1)),
                                 ("bidirectional", range(0, self.cfg.get("baseline_max_order", 10) // 2 + 1))):
                models[f"markov_{kind}"], chosen = select_and_fit(codes, kind, orders)
                out[f"markov_{kind}_order"], out[f"markov_{kind}_alpha"] = chosen["order"], chosen["alpha"]
            for split in ("val", "test"):
                collator = MLMCollator(self.tokenizer, self.max_tokens, self.mask_prob, fixed_masks=True,
                                       seed=self.seed)
                scores = score_baselines(self.datasets[split].iter_all(), collator, self.train_token_counts, models)
                out.update({f"{split}/{key}": value for key, value in scores.items()})
            self._baselines = out
        return self._baselines

    def _train_sequences(self) -> list[str]:
        """The train split's bases for the k-mer baselines: all of it, or evenly spread 100 kbp
        chunks up to ``data.baseline_max_bp``."""
        cap = int(self.cfg.get("baseline_max_bp", 20_000_000))
        regions = _regions_as_tuples(self.splits["train"])
        if sum(end - start for _, start, end in regions) > cap:
            return list(sample_training_chunks(self.fasta, regions, total_bp=cap, min_chunk_bp=100_000,
                                               max_chunk_bp=100_000, seed=self.seed, uppercase=True))
        with Genome(self.fasta) as genome:
            return [genome.fetch(record, start, end) for record, start, end in regions]

    def _windows(self, split: str) -> GenomeWindows | TiledWindows:
        train = split == "train"
        if not train:
            return TiledWindows(self.fasta, self.splits[split], window_bp=self.cfg["window_bp"],
                                stride_bp=self.cfg.get("eval_stride_bp"), max_windows=self.cfg["eval_windows"],
                                uppercase=self.cfg["uppercase"])
        return GenomeWindows(
            self.fasta, self.splits[split], window_bp=self.cfg["window_bp"],
            num_windows=self.cfg["windows_per_epoch"] if train else self.cfg["eval_windows"],
            seed=self.seed + {"train": 0, "val": 1, "test": 2}[split],
            max_ambiguous_fraction=self.cfg["max_n_fraction"], uppercase=self.cfg["uppercase"],
            reverse_complement_prob=self.cfg["reverse_complement_prob"] if train else 0.0,
            fixed=not train,
        )

    def _loader(self, split: str) -> DataLoader:
        epoch = self.datasets[split].epoch
        collator = MLMCollator(self.tokenizer, self.max_tokens, self.mask_prob,
                               fixed_masks=split != "train", seed=self.seed, epoch=epoch)
        workers = self.cfg["num_workers"]
        # An own generator: creating the loader's iterator then leaves the global torch RNG (dropout)
        # alone, so a resumed run draws the same dropout masks as an uninterrupted one.
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        kwargs = dict(batch_size=self.cfg["batch_size"], collate_fn=collator, num_workers=workers,
                      persistent_workers=workers > 0 and split != "train", generator=generator)
        if split != "train":
            return DataLoader(self.datasets[split], **kwargs)
        return ResumableLoader(self.datasets[split], position=self._batches_done, epoch=epoch, **kwargs)

    def _batches_done(self) -> int:
        trainer = self.trainer
        return trainer.fit_loop.epoch_loop.batch_progress.current.processed if trainer is not None else 0

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
