"""Fixtures: a planted DeepSEA bundle in the real layouts (v7.3 train, v5 valid/test), and a small
genome with labelled bins for the intervals path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bigbird_dna.data.chromatin.onehot import encode_onehot
from tests.chromatin.deepsea_files import (
    planted_samples,
    with_reverse_complements,
    write_v5,
    write_v73,
)
from tests.conftest import LAMBDA


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def planted_bundle(tmp_path_factory) -> Path:
    """``deepsea_train/`` with the planted signal: train.mat (v7.3, 512 windows + their reverse
    complements as the second half), valid.mat (v5, 128 + RC, halves) and test.mat (v5, 32 + RC,
    interleaved)."""
    folder = tmp_path_factory.mktemp("deepsea_train")
    for name, n, seed, prefix, layout, writer in (("train.mat", 512, 0, "train", "halves", write_v73),
                                                  ("valid.mat", 128, 1, "valid", "halves", write_v5),
                                                  ("test.mat", 32, 2, "test", "interleaved", write_v5)):
        seqs, labels = with_reverse_complements(*planted_samples(n, seed=seed), layout=layout)
        writer(folder / name, encode_onehot(seqs), labels, prefix=prefix)
    return folder


def _lambda_seq() -> str:
    return "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])


@pytest.fixture(scope="session")
def labelled_genome(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    """``(genome.fa, bins.tsv, records)``: three records cut from lambda phage, and 200-bp bins on
    each (a header row, a name column, then 6 random 0/1 labels)."""
    folder = tmp_path_factory.mktemp("intervals")
    seq = _lambda_seq()
    records = {"chr1": seq[:20000], "chr7": seq[20000:32000], "chr8": seq[32000:44000]}
    fasta = folder / "genome.fa"
    with open(fasta, "w") as out:
        for name, bases in records.items():
            out.write(f">{name}\n" + "".join(bases[i:i + 60] + "\n" for i in range(0, len(bases), 60)))
    rng = np.random.default_rng(0)
    lines = ["chrom\tstart\tend\tname\t" + "\t".join(f"feature{j}" for j in range(6))]
    for name, bases in records.items():
        for start in range(0, len(bases) - 200, 600):
            labels = "\t".join(str(v) for v in rng.integers(0, 2, 6))
            lines.append(f"{name}\t{start}\t{start + 200}\tbin\t{labels}")
    bins = folder / "bins.tsv"
    bins.write_text("\n".join(lines) + "\n")
    return fasta, bins, records
