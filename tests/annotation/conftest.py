"""A tiny annotated genome: two records, genes on both strands, overlapping genes, a shared TSS,
a gene with only a CDS child, TSSs near a record start and across a split boundary, an N block,
and introns on both strands (GT...AG written into the genome; one GC-AG) with a donor shared by two
transcripts, a donor near a record start, one across a split boundary, and a + and a - acceptor at
the same cut.

GFF coordinates below are 1-based and closed; the expected values in the tests are 0-based.
With holdout_fraction 0.1, chrA (20000 bp) splits as train [0, 16000), val [16000, 18000),
test [18000, 20000); chrB (6000 bp) as train [0, 4800), val [4800, 5400), test [5400, 6000);
chrC (3000 bp) as train [0, 2400), val [2400, 2700), test [2700, 3000).
"""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pytest

LENGTHS = {"chrA": 20000, "chrB": 6000, "chrC": 3000}
N_BLOCK = ("chrA", 9000, 9600)  # 0-based, half-open

# (gene id, record, start, end, strand, [(transcript id, type, start, end, [exons 1-based closed])])
GENES = [
    ("gA1", "chrA", 2001, 5000, "+", [("tA1a", "mRNA", 2001, 5000, [(2001, 2500), (3001, 5000)]),
                                      ("tA1b", "mRNA", 2001, 4000, [(2001, 2500), (3001, 4000)])]),
    ("gA2", "chrA", 4501, 8000, "-", [("tA2a", "mRNA", 4501, 8000, [(4501, 6000), (7001, 8000)]),
                                      ("tA2b", "lnc_RNA", 5001, 7500, [(5001, 7500)])]),
    ("gA3", "chrA", 11001, 12500, "+", [("tA3", "ncRNA", 11001, 12500, [(11001, 11400), (11701, 12500)])]),
    ("gA4", "chrA", 15001, 17500, "-", [("tA4", "mRNA", 15001, 17500, [(15001, 16300), (16601, 17500)])]),
    ("gA6", "chrA", 16101, 16900, "+", [("tA6", "mRNA", 16101, 16900, [(16101, 16150), (16301, 16900)])]),
    ("gA5", "chrA", 18501, 19500, "+", [("tA5", "mRNA", 18501, 19500, [(18501, 18800), (19101, 19500)])]),
    ("gB1", "chrB", 1001, 3000, "-", [("tB1", "mRNA", 1001, 3000, [(1001, 1800), (2201, 3000)])]),
    ("gB2", "chrB", 101, 900, "+", [("tB2", "mRNA", 101, 900, [(101, 150), (401, 900)])]),
    ("gB3", "chrB", 3501, 4500, "+", []),  # gene -> CDS only: the gene stands for its own transcript
    ("gC1", "chrC", 1001, 2000, "+", [("tC1", "mRNA", 1001, 2000, [(1001, 2000)])]),
]
# (record, strand, 0-based TSS) of every transcript, shared TSS of tA1a/tA1b once.
EXPECTED_TSS = sorted({("chrA", "+", 2000), ("chrA", "-", 7999), ("chrA", "-", 7499), ("chrA", "+", 11000),
                       ("chrA", "-", 17499), ("chrA", "+", 16100), ("chrA", "+", 18500), ("chrB", "-", 2999),
                       ("chrB", "+", 100), ("chrB", "+", 3500), ("chrC", "+", 1000)})
# (record, strand, cut) of every distinct splice site (0-based cuts: see bigbird_dna/data/annotation/splice_sites.py)
EXPECTED_DONORS = sorted({("chrA", "+", 2500), ("chrA", "-", 7000), ("chrA", "+", 11400), ("chrA", "-", 16600),
                          ("chrA", "+", 16150), ("chrA", "+", 18800), ("chrB", "-", 2200), ("chrB", "+", 150)})
EXPECTED_ACCEPTORS = sorted({("chrA", "+", 3000), ("chrA", "-", 6000), ("chrA", "+", 11700), ("chrA", "-", 16300),
                             ("chrA", "+", 16300), ("chrA", "+", 19100), ("chrB", "-", 1800), ("chrB", "+", 400)})
NONCANONICAL_DONORS = {"tB1": "GC"}  # a GC-AG intron: its donor reads GC on the transcript's strand


def _reverse_complement(seq: str) -> str:
    return seq[::-1].translate(str.maketrans("ACGT", "TGCA"))


def _write(seq: str, at: int, bases: str) -> str:
    return seq[:at] + bases + seq[at + len(bases):]


def genome_sequences() -> dict[str, str]:
    rng = np.random.default_rng(7)
    seqs = {name: "".join(rng.choice(list("ACGT"), length)) for name, length in LENGTHS.items()}
    record, start, end = N_BLOCK
    seqs[record] = seqs[record][:start] + "N" * (end - start) + seqs[record][end:]
    for _, record, _, _, strand, transcripts in GENES:  # each intron [a, b) reads GT...AG on its strand
        for tid, _, _, _, exons in transcripts:
            for (_, last), (first, _) in zip(exons, exons[1:]):
                a, b = last, first - 1  # the intron between 1-based closed exons, 0-based half-open
                donor, acceptor = NONCANONICAL_DONORS.get(tid, "GT"), "AG"
                if strand == "+":
                    seqs[record] = _write(_write(seqs[record], a, donor), b - 2, acceptor)
                else:
                    seqs[record] = _write(_write(seqs[record], b - 2, _reverse_complement(donor)), a,
                                          _reverse_complement(acceptor))
    return seqs


def gff3_text() -> str:
    lines = ["##gff-version 3", *(f"##sequence-region {n} 1 {length}" for n, length in LENGTHS.items())]
    for gid, record, start, end, strand, transcripts in GENES:
        lines.append(f"{record}\ttest\tgene\t{start}\t{end}\t.\t{strand}\t.\tID={gid};Name={gid}")
        for tid, kind, ts, te, exons in transcripts:
            lines.append(f"{record}\ttest\t{kind}\t{ts}\t{te}\t.\t{strand}\t.\tID={tid};Parent={gid}")
            for i, (es, ee) in enumerate(exons):
                lines.append(f"{record}\ttest\texon\t{es}\t{ee}\t.\t{strand}\t.\tID={tid}-e{i};Parent={tid}")
        if not transcripts:
            lines.append(f"{record}\ttest\tCDS\t{start}\t{end}\t.\t{strand}\t0\tID=cds-{gid};Parent={gid}")
    return "\n".join(lines) + "\n"


def gtf_text() -> str:
    lines = ["#gtf-version 2.2"]
    for gid, record, start, end, strand, transcripts in GENES:
        lines.append(f'{record}\ttest\tgene\t{start}\t{end}\t.\t{strand}\t.\tgene_id "{gid}"; transcript_id "";')
        for tid, _, ts, te, exons in transcripts:
            attrs = f'gene_id "{gid}"; transcript_id "{tid}";'
            lines.append(f"{record}\ttest\ttranscript\t{ts}\t{te}\t.\t{strand}\t.\t{attrs}")
            lines += [f"{record}\ttest\texon\t{es}\t{ee}\t.\t{strand}\t.\t{attrs}" for es, ee in exons]
        if not transcripts:
            lines.append(f'{record}\ttest\tCDS\t{start}\t{end}\t.\t{strand}\t0\tgene_id "{gid}"; '
                         f'transcript_id "{gid}";')
    return "\n".join(lines) + "\n"


def write_fasta(path: Path, records: dict[str, str], width: int = 70) -> Path:
    text = "".join(f">{name}\n" + "".join(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
                   for name, seq in records.items())
    path.write_text(text)
    return path


def gzip_copy(path: Path) -> Path:
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as src, gzip.open(target, "wb") as out:
        shutil.copyfileobj(src, out)
    return target


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def annotated(tmp_path) -> dict[str, Path]:
    """Paths of the toy genome (``fasta``), its ``gff3``, ``gtf`` and gzip copies (``*_gz``)."""
    folder = tmp_path / "inputs"
    folder.mkdir()
    fasta = write_fasta(folder / "genome.fa", genome_sequences())
    gff = folder / "genes.gff3"
    gff.write_text(gff3_text())
    gtf = folder / "genes.gtf"
    gtf.write_text(gtf_text())
    return {"fasta": fasta, "gff3": gff, "gtf": gtf, "fasta_gz": gzip_copy(fasta), "gff3_gz": gzip_copy(gff),
            "gtf_gz": gzip_copy(gtf)}
