"""Fixture genomes built from the real lambda phage FASTA in ``tests/files``.

The toy genome has four records with the features real genomes throw at the loader:

- ``chrA`` (12 kb): soft-masked lowercase at [2000, 3000), 15 bp N runs every 500 bp from 3500
  to 5500, and a 3 kb N gap at [6000, 9000);
- ``chrB`` (18 kb): one IUPAC code (R, Y, K, M, S, W, B, D, H, V in turn) every 1000 bp;
- ``chrC`` (18.5 kb): plain sequence;
- ``chrShort`` (300 bp): shorter than the test window.

All coordinates 0-based, half-open.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest
from Bio import SeqIO

from bigbird_dna.genome import open_genome
from bigbird_dna.genome.reader import GenomeReader

LAMBDA_FASTA = Path(__file__).parents[1] / "files" / "lambda_phage.fa"


@dataclass(frozen=True)
class ToyGenome:
    """The toy genome's sequences, its FASTA file, the genome opened (and prepared), and where its
    features lie."""

    records: dict[str, str]
    fasta: Path
    genome: GenomeReader
    soft_mask: tuple[int, int] = (2000, 3000)  # chrA
    n_gap: tuple[int, int] = (6000, 9000)  # chrA
    iupac: str = "RYKMSWBDHV"  # chrB


def _write_fasta(path: Path, records: dict[str, str], width: int = 60) -> Path:
    with open(path, "w") as handle:
        for name, seq in records.items():
            handle.write(f">{name} test record\n")
            handle.writelines(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
    return path


def _biopython_records(path: Path) -> dict[str, str]:
    return {rec.id: str(rec.seq) for rec in SeqIO.parse(str(path), "fasta")}


@pytest.fixture(autouse=True)
def cache_dir(tmp_path, monkeypatch) -> Path:
    """Keep decompressed genome copies inside the test's tmp_path, never in ~/.cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(cache))
    return cache


@pytest.fixture
def write_fasta(tmp_path) -> Callable[..., Path]:
    """``write_fasta(name, records, width=60)`` writes ``tmp_path/name`` with ``width``-bp lines."""
    return lambda name, records, width=60: _write_fasta(tmp_path / name, records, width)


@pytest.fixture(scope="session")
def biopython_records() -> Callable[[Path], dict[str, str]]:
    """The reference parse (record id to sequence) that fetches are compared against."""
    return _biopython_records


@pytest.fixture(scope="session")
def lambda_fasta() -> Path:
    return LAMBDA_FASTA


@pytest.fixture(scope="session")
def lambda_seq() -> str:
    return next(iter(_biopython_records(LAMBDA_FASTA).values()))


@pytest.fixture(scope="session")
def toy_records(lambda_seq) -> dict[str, str]:
    soft_mask, n_gap, iupac = ToyGenome.soft_mask, ToyGenome.n_gap, ToyGenome.iupac
    chr_a = list(lambda_seq[:12000])
    chr_a[soft_mask[0]:soft_mask[1]] = "".join(chr_a[soft_mask[0]:soft_mask[1]]).lower()
    for start in range(3500, 6000, 500):
        chr_a[start:start + 15] = "N" * 15
    chr_a[n_gap[0]:n_gap[1]] = "N" * (n_gap[1] - n_gap[0])
    chr_b = list(lambda_seq[12000:30000])
    for i, start in enumerate(range(500, len(chr_b), 1000)):
        chr_b[start] = iupac[i % len(iupac)]
    return {"chrA": "".join(chr_a), "chrB": "".join(chr_b), "chrC": lambda_seq[30000:],
            "chrShort": lambda_seq[:300]}


@pytest.fixture
def toy(write_fasta, toy_records) -> Iterator[ToyGenome]:
    """The toy genome written as a plain FASTA (60 bp lines), opened and prepared (indexed)."""
    fasta = write_fasta("toy.fa", toy_records)
    genome = open_genome(fasta)
    assert genome.record_lengths  # indexed here, in the main process, as the data modules do
    yield ToyGenome(toy_records, fasta, genome)
    genome.close()
