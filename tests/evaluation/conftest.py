"""Fixtures of the evaluation tests: small planted-motif datasets written in the Genomic Benchmarks
folder layout and the Nucleotide Transformer benchmark's CSV layout, and the overrides that keep
each fold's training to two steps and its baselines to seconds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

# Two steps of the tiny debug model on one-base tokens; the baselines on, but cheap (k <= 2, one CNN epoch).
EVALUATE_FAST = ["debug=fast", "tokenizer=char", "trainer.max_steps=2", "trainer.val_check_interval=2",
                 "trainer.check_val_every_n_epoch=null", "trainer.enable_progress_bar=false",
                 "data.baselines.cnn_max_epochs=1", "+data.baselines.kmer_max_k=2"]
MOTIFS = ("TGACGTCA", "GGGGCCCC", "TATATATA")


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def one_thread():
    """One torch thread: on 2 shared cores, two threads per tiny op wait on each other (a 4-step run
    takes ~10x longer)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def planted(counts: dict[str, int], seed: int, length: int = 80) -> dict[str, list[str]]:
    """``{class: sequences}``: random bases, base ``j`` twice as likely as each other one in class ``j``
    (a signal a k-mer model learns from a few dozen sequences); class ``j > 0`` also has motif ``j - 1``."""
    rng = np.random.default_rng(seed)
    found = {}
    for j, (name, count) in enumerate(counts.items()):
        probs = np.full(4, 0.2)
        probs[j % 4] = 0.4
        seqs = []
        for _ in range(count):
            bases = list(rng.choice(list("ACGT"), length, p=probs))
            if j:
                at = int(rng.integers(0, length - 8))
                bases[at:at + 8] = MOTIFS[j - 1]
            seqs.append("".join(bases))
        found[name] = seqs
    return found


def genomic_benchmarks_folder(root: Path, train: dict[str, int], test: dict[str, int]) -> Path:
    """``root/{train,test}/<class>/<i>.txt``, one sequence per file."""
    for split, counts, seed in (("train", train, 0), ("test", test, 1)):
        for name, seqs in planted(counts, seed).items():
            (root / split / name).mkdir(parents=True, exist_ok=True)
            for i, seq in enumerate(seqs):
                (root / split / name / f"{i}.txt").write_text(seq + "\n")
    return root


def nucleotide_transformer_folder(root: Path, train: dict[str, int], test: dict[str, int]) -> Path:
    """``root/train.csv`` and ``root/test.csv`` with columns ``sequence,label,name`` (integer labels)."""
    root.mkdir(parents=True)
    for split, counts, seed in (("train", train, 2), ("test", test, 3)):
        rows = [f"{seq},{label},{split}_{label}_{i}" for label, seqs in planted(counts, seed).items()
                for i, seq in enumerate(seqs)]
        (root / f"{split}.csv").write_text("sequence,label,name\n" + "\n".join(rows) + "\n")
    return root
