"""Genes, transcripts and exons of a GFF3 or GTF annotation (plain or gzip), 0-based and half-open.

**Why a small parser of our own.** We need four things from the file (gene and transcript spans,
strands, exons) and clear, line-numbered errors. gffutils builds an sqlite database of every
feature first, slow and heavy for the 100k-1M features of a plant or mammalian annotation, and
BCBio-GFF is not among our dependencies (nor maintained for GTF); both would still need our own
checks against the genome. One streaming pass plus a dictionary of IDs does it in seconds.

**What counts as what.**

- GFF3: a *gene* is any feature whose type ends in ``gene`` (``gene``, ``pseudogene``,
  ``ncRNA_gene``...). A *transcript* is any other feature whose ``Parent`` is a gene (``mRNA``,
  ``transcript``, ``lnc_RNA``, ``tRNA``...), or a parentless feature with exon children. A gene with
  no transcript child (prokaryotic gene -> CDS annotations) is its own transcript. ``exon`` lines
  attach to every transcript in their ``Parent`` list. Features sharing one ``ID`` over several lines
  are merged into their span.
- GTF: transcripts are grouped by ``transcript_id``: the span of their ``transcript`` line, else of
  all their lines; genes by ``gene_id``: their ``gene`` line, else the span of their transcripts.

Lines for parts of transcripts (CDS, UTRs, codons) are checked but otherwise unused. Transcripts
must have strand ``+`` or ``-`` (their TSS depends on it).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from bigbird_dna.data.annotation.gff_lines import (
    GFF3,
    FeatureLine,
    detect_format,
    feature_lines,
    gff3_attributes,
    gtf_attributes,
)
from bigbird_dna.errors import InputError

PART_TYPES = frozenset({"CDS", "five_prime_UTR", "three_prime_UTR", "UTR", "start_codon", "stop_codon",
                        "intron", "Selenocysteine", "polypeptide", "region", "chromosome", "contig",
                        "supercontig", "scaffold", "sequence_feature"})


@dataclass(frozen=True)
class Gene:
    """A gene: bases ``[start, end)`` of ``record`` (0-based, half-open) on ``strand``."""

    id: str
    record: str
    start: int
    end: int
    strand: str
    type: str = "gene"


@dataclass(frozen=True)
class Transcript:
    """A transcript: ``[start, end)`` of ``record`` (0-based, half-open, forward-strand coordinates)
    on ``strand`` (``+``/``-``), with its ``exons`` as sorted ``(start, end)`` pairs."""

    id: str
    record: str
    start: int
    end: int
    strand: str
    gene_id: str
    type: str
    exons: tuple[tuple[int, int], ...] = ()

    @property
    def tss(self) -> int:
        """0-based position of the first transcribed base: ``start`` on ``+``, ``end - 1`` on ``-``."""
        return self.start if self.strand == "+" else self.end - 1


@dataclass
class Annotation:
    """What :func:`read_annotation` found, and ``counts`` of features by role and type."""

    path: Path
    format: str
    genes: dict[str, Gene]
    transcripts: list[Transcript]
    counts: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class _Feature:
    line: FeatureLine
    start: int
    end: int
    parents: list[str]
    exons: list[tuple[int, int]] = field(default_factory=list)
    children: int = 0


def _is_gene_type(kind: str) -> bool:
    return kind.lower().endswith("gene")


def _check_strand(feature: FeatureLine, path: Path, what: str) -> None:
    if feature.strand not in ("+", "-"):
        raise InputError(f"{path}, line {feature.line}: {what} has strand {feature.strand!r}, but a transcript "
                         "needs + or - to place its TSS. Fix the strand in column 7, or remove the transcript.")


def _read_gff3(path: Path, record_lengths: dict[str, int]) -> tuple[dict[str, Gene], list[Transcript], Counter]:
    features: dict[str, _Feature] = {}
    exons: list[tuple[FeatureLine, list[str]]] = []
    anonymous = 0
    for line in feature_lines(path, record_lengths):
        if line.type in PART_TYPES:
            continue
        attributes = gff3_attributes(line.attributes)
        parents = attributes.get("Parent", [])
        if line.type == "exon":
            exons.append((line, parents))
            continue
        ids = attributes.get("ID")
        if not ids:
            anonymous += 1
            ids = [f"{line.type}:{line.record}:{line.start}-{line.end}:{anonymous}"]
        known = features.get(ids[0])
        if known is None:
            features[ids[0]] = _Feature(line, line.start, line.end, parents)
        else:  # one feature over several lines
            known.start, known.end = min(known.start, line.start), max(known.end, line.end)
    for line, parents in exons:
        for parent in parents:
            if parent in features:
                features[parent].exons.append((line.start, line.end))
    genes = {fid: Gene(fid, f.line.record, f.start, f.end, f.line.strand, f.line.type)
             for fid, f in features.items() if _is_gene_type(f.line.type)}
    transcripts: list[Transcript] = []
    for fid, f in features.items():
        if fid in genes:
            continue
        gene_parents = [p for p in f.parents if p in genes]
        if gene_parents or (not f.parents and f.exons):
            gene_id = gene_parents[0] if gene_parents else fid
            if gene_parents:
                features[gene_id].children += 1
            _check_strand(f.line, path, f"transcript {fid!r} ({f.line.type})")
            transcripts.append(Transcript(fid, f.line.record, f.start, f.end, f.line.strand, gene_id,
                                          f.line.type, tuple(sorted(f.exons))))
    for gid, gene in genes.items():
        f = features[gid]
        if not f.children:
            _check_strand(f.line, path, f"gene {gid!r} (with no transcript, so it stands for its own)")
            transcripts.append(Transcript(gid, gene.record, gene.start, gene.end, gene.strand, gid, gene.type,
                                          tuple(sorted(f.exons))))
    return genes, transcripts, Counter(t.type for t in transcripts)


def _read_gtf(path: Path, record_lengths: dict[str, int]) -> tuple[dict[str, Gene], list[Transcript], Counter]:
    spans: dict[str, list] = {}  # transcript_id -> [first line, start, end, gene_id, has_transcript_line, exons]
    gene_lines: dict[str, FeatureLine] = {}
    for line in feature_lines(path, record_lengths):
        attributes = gtf_attributes(line.attributes)
        tid, gid = attributes.get("transcript_id", ""), attributes.get("gene_id", "")
        if line.type == "gene" and gid:
            gene_lines.setdefault(gid, line)
            continue
        if not tid:
            continue
        entry = spans.get(tid)
        if entry is None:
            entry = spans[tid] = [line, line.start, line.end, gid, False, []]
        if line.type == "transcript":
            if not entry[4]:
                entry[0], entry[1], entry[2], entry[4] = line, line.start, line.end, True
        elif not entry[4]:
            entry[1], entry[2] = min(entry[1], line.start), max(entry[2], line.end)
        if line.type == "exon":
            entry[5].append((line.start, line.end))
    transcripts = []
    for tid, (line, start, end, gid, _, exons) in spans.items():
        _check_strand(line, path, f"transcript {tid!r}")
        transcripts.append(Transcript(tid, line.record, start, end, line.strand, gid or tid, "transcript",
                                      tuple(sorted(exons))))
    genes = {gid: Gene(gid, line.record, line.start, line.end, line.strand) for gid, line in gene_lines.items()}
    for t in transcripts:  # genes without a gene line: the span of their transcripts
        gene = genes.get(t.gene_id)
        if gene is None or t.gene_id not in gene_lines:
            start = min(t.start, gene.start) if gene else t.start
            end = max(t.end, gene.end) if gene else t.end
            genes[t.gene_id] = Gene(t.gene_id, t.record, start, end, t.strand)
    return genes, transcripts, Counter(t.type for t in transcripts)


def read_annotation(path: str | os.PathLike, record_lengths: dict[str, int]) -> Annotation:
    """Read a GFF3 or GTF annotation (plain or gzip; see the module docstring) against a genome.

    Args:
        path: the annotation file.
        record_lengths: record name to length of the genome FASTA; every feature is checked against it.

    Returns:
        An :class:`Annotation` whose transcripts are sorted by ``(record, start, end, strand, id)``.

    Raises:
        InputError: a missing or malformed file, a seqid not in the genome, a feature past its
            record's end, a transcript without a +/- strand, or no transcript at all.
    """
    path = Path(path).expanduser()
    form = detect_format(path)
    reader = _read_gff3 if form == GFF3 else _read_gtf
    genes, transcripts, types = reader(path, record_lengths)
    if not transcripts:
        raise InputError(f"{path} ({form.upper()}) holds no gene or transcript features. Give an annotation with "
                         "genes and transcripts (GFF3: gene + mRNA/transcript with Parent=; GTF: transcript_id).")
    order = {name: i for i, name in enumerate(record_lengths)}
    transcripts.sort(key=lambda t: (order[t.record], t.start, t.end, t.strand, t.id))
    counts = {"genes": len(genes), "transcripts": len(transcripts), "transcript_types": dict(sorted(types.items())),
              "exons": sum(len(t.exons) for t in transcripts)}
    return Annotation(path, form, genes, transcripts, counts)
