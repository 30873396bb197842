"""Synthetic 3-class data: random sequences, each class with its own planted motif, written as one
FASTA per class, as a TSV with string labels and as a Genomic Benchmarks folder of .txt files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

MOTIFS = {"alpha": "CGCGCGCGCGCG", "beta": "TATATATATATA", "gamma": "GGGGGGGGGGGG"}
# A 32-wide, 2-layer encoder over one-base tokens: small enough for CPU tests.
TINY = ["tokenizer=char", "model.hidden_size=32", "model.num_heads=2", "model.intermediate_size=64",
        "model.max_positions=256", "model.attention.block_size=16", "model.dropout=0.0",
        "trainer.log_every_n_steps=1", "trainer.enable_model_summary=false", "trainer.enable_progress_bar=false",
        "data.num_workers=0"]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


def planted(per_class: int, length: int = 150, seed: int = 0, copies: int = 2) -> dict[str, list[str]]:
    """``{class: sequences}``: uniform random bases with ``copies`` of the class's motif at random
    positions (copies may overlap)."""
    rng = np.random.default_rng(seed)
    found: dict[str, list[str]] = {}
    for name, motif in MOTIFS.items():
        seqs = []
        for _ in range(per_class):
            bases = list("".join(rng.choice(list("ACGT"), length)))
            for _ in range(copies):
                start = int(rng.integers(0, length - len(motif)))
                bases[start:start + len(motif)] = motif
            seqs.append("".join(bases))
        found[name] = seqs
    return found


def write_fasta_per_class(folder: Path, data: dict[str, list[str]]) -> dict[str, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, seqs in data.items():
        paths[name] = folder / f"{name}.fa"
        paths[name].write_text("".join(f">{name}_{i}\n{s}\n" for i, s in enumerate(seqs)))
    return paths


def write_table(path: Path, data: dict[str, list[str]], sep: str = "\t") -> Path:
    rows = [(s, name) for name, seqs in data.items() for s in seqs]
    path.write_text(f"sequence{sep}label\n" + "".join(f"{s}{sep}{y}\n" for s, y in rows))
    return path


def write_class_folders(root: Path, data: dict[str, list[str]]) -> Path:
    """``root/<class>/<i>.txt``, one sequence per file (the Genomic Benchmarks layout)."""
    for name, seqs in data.items():
        (root / name).mkdir(parents=True, exist_ok=True)
        for i, s in enumerate(seqs):
            (root / name / f"{i}.txt").write_text(s)
    return root


def mapping(paths: dict[str, Path]) -> str:
    """A Hydra override value ``{a: 'path', ...}``."""
    return "{" + ", ".join(f"{name}: '{path}'" for name, path in paths.items()) + "}"
