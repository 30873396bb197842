"""Shared fixtures of the motif tests: planted tasks generated on the fly from the bundled genome
(and from a small FASTA written here), JASPAR motifs from pyjaspar's offline database, and helpers
to read a task folder back."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from bigbird_dna.genome import open_genome
from bigbird_dna.motifs.jaspar import fetch_motifs, latest_release
from bigbird_dna.motifs.planted import PlantedSettings, planted_task
from bigbird_dna.motifs.task_folder import build_manifest, write_task_folder
from tests.conftest import REPO

GENOME = REPO / "sample_data" / "h_pylori_F32.fa"
PAIR = ("MA0139", "MA0148")  # CTCF (15 bp, GC-rich) then FOXA1 (8 bp, AT-rich): distinct shapes


@pytest.fixture(scope="session")
def pair():
    return fetch_motifs(list(PAIR))


def make_task(folder: Path, motifs, genome: Path = GENOME, **settings) -> Path:
    """Generate and write a planted task folder (what ``motifs plant`` does)."""
    chosen = PlantedSettings(**settings)
    with open_genome(genome) as reader:
        task = planted_task(reader, motifs, chosen)
    return write_task_folder(folder, task, build_manifest(task, motifs, chosen, latest_release(), genome))


@pytest.fixture(scope="session")
def presence_task(tmp_path_factory, pair) -> Path:
    return make_task(tmp_path_factory.mktemp("presence") / "task", pair[:1], rule="presence", num=1000)


@pytest.fixture(scope="session")
def spacing_task(tmp_path_factory, pair) -> Path:
    return make_task(tmp_path_factory.mktemp("spacing") / "task", pair, rule="spacing", num=2000)


def read_rows(folder: Path) -> list[dict]:
    """Every TSV row of a task folder, train then val then test, with ``split`` added."""
    rows = []
    for split in ("train", "val", "test"):
        with open(folder / f"{split}.tsv") as handle:
            rows += [dict(row, split=split) for row in csv.DictReader(handle, delimiter="\t")]
    return rows


def read_sites(folder: Path) -> dict[str, list[tuple[int, int, str, str]]]:
    """``sites.bed`` as ``{sequence name: [(start, end, motif ID, strand), ...]}``."""
    sites: dict[str, list] = {}
    for line in (folder / "sites.bed").read_text().splitlines():
        name, start, end, motif_id, score, strand = line.split("\t")
        sites.setdefault(name, []).append((int(start), int(end), motif_id, strand))
    return sites


def oracle_attributions(sequences: np.ndarray, sites: list[list[tuple[int, int]]], seed: int = 0) -> np.ndarray:
    """Hypothetical contributions ``[N, 4, L]`` of a perfect model: one-hot x (1 inside planted sites,
    N(0, 0.05) noise elsewhere)."""
    weights = np.random.default_rng(seed).normal(0, 0.05, size=(len(sequences), 1, sequences.shape[2]))
    for row, spans in enumerate(sites):
        for start, end in spans:
            weights[row, :, start:end] = 1.0
    return (sequences * weights).astype(np.float32)
