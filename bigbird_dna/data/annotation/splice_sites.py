"""Splice sites of an annotation's transcripts: each intron's donor and acceptor, as cuts.

A transcript's exons (0-based, half-open, forward strand) are sorted, and overlapping or touching
exons merged; each gap between two merged exons is an intron ``[a, b)``. Its two boundaries are the
sites, each a cut (:mod:`~bigbird_dna.data.annotation.samples`: ``cut`` is the index of the base to
the boundary's right on the forward strand), and the window around a cut holds ``upstream_bp`` bases
5' of it on the transcript's strand::

    site      + cut  - cut  on the transcript's strand          canonical   in the window
    donor     a      b      exon | intron: the intron's 5' end  GT          seq[upstream_bp:upstream_bp + 2]
    acceptor  b      a      intron | exon: the intron's 3' end  AG          seq[upstream_bp - 2:upstream_bp]

So ``seq[upstream_bp]`` is the first intron base of a donor window and the first exon base of an
acceptor window. On the minus strand the donor is at the genomic *start* of the exon 5' of it.

Worked example, exons ``101-200`` and ``301-400`` in a GFF (1-based, closed): exons ``[100, 200)``
and ``[300, 400)``, intron ``[200, 300)``. On ``+``: donor cut 200 (``genome[200:202] == "GT"``),
acceptor cut 300 (``genome[298:300] == "AG"``). On ``-``: donor cut 300 (``genome[298:300] == "AC"``,
the reverse complement of GT), acceptor cut 200 (``genome[200:202] == "CT"``).

Besides GT-AG (about 99% of plant and animal introns), GC-AG (~1%) and AT-AC (U12 introns, ~0.1%)
exist; :data:`SITES` names them, and :func:`dinucleotide_counts` tallies what the positives carry.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable, Sequence

from bigbird_dna.data.annotation.gff import Transcript
from bigbird_dna.genome.sequence import reverse_complement


@dataclass(frozen=True)
class SiteKind:
    """A kind of splice site: its ``canonical`` dinucleotide and the ``known`` minor ones (read on
    the transcript's strand), and where the dinucleotide starts relative to the cut, on that strand
    (``offset``: 0 for a donor, whose intron starts at the cut; -2 for an acceptor, whose intron ends there)."""

    name: str
    canonical: str
    known: tuple[str, ...]
    offset: int

    def cut(self, intron: tuple[int, int], strand: str) -> int:
        """The cut of this site of ``intron`` ``[a, b)`` on ``strand``: ``a`` or ``b`` (see the table above)."""
        a, b = intron
        return a if (self.offset == 0) == (strand == "+") else b

    def dinucleotide_start(self, cut: int, strand: str) -> int:
        """Forward-strand index of the first base of the dinucleotide at ``cut``: it covers
        ``[p, p + 2)``, reading :meth:`forward_dinucleotide` there."""
        return cut + self.offset if strand == "+" else cut - 2 - self.offset

    def cut_at(self, dinucleotide_start: int, strand: str) -> int:
        """The inverse of :meth:`dinucleotide_start`."""
        if strand == "+":
            return dinucleotide_start - self.offset
        return dinucleotide_start + 2 + self.offset

    def forward_dinucleotide(self, strand: str) -> str:
        """The canonical dinucleotide as the forward strand reads it (``GT`` on ``+``, ``AC`` on ``-``)."""
        return self.canonical if strand == "+" else reverse_complement(self.canonical)

    def in_window(self, sequence: str, upstream_bp: int) -> str:
        """The dinucleotide of a window read on the transcript's strand whose cut is at ``upstream_bp``."""
        return sequence[upstream_bp + self.offset:upstream_bp + self.offset + 2]


SITES = {"donor": SiteKind("donor", "GT", ("GC", "AT"), 0),
         "acceptor": SiteKind("acceptor", "AG", ("AC",), -2)}


def introns(exons: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The gaps ``[a, b)`` between a transcript's exons (``[start, end)`` pairs, any order), after
    merging exons that overlap or touch."""
    out = []
    end = None
    for start, stop in sorted(exons):
        if end is not None and start > end:
            out.append((end, start))
        end = stop if end is None else max(end, stop)
    return out


def splice_sites(transcripts: Iterable[Transcript], site: SiteKind) -> tuple[list[tuple[str, str, int]], dict]:
    """Every distinct site of kind ``site`` of the transcripts' introns.

    Returns:
        ``(sites, report)``: sites as sorted ``(record, strand, cut)``, shared ones once; the report
        counts transcripts, multi-exon transcripts, introns and sites before and after deduplication.
    """
    transcripts = list(transcripts)
    found = []
    multi_exon = 0
    for t in transcripts:
        gaps = introns(t.exons)
        multi_exon += bool(gaps)
        found += [(t.record, t.strand, site.cut(gap, t.strand)) for gap in gaps]
    sites = sorted(set(found))
    return sites, {"transcripts": len(transcripts), "multi_exon_transcripts": multi_exon, "introns": len(found),
                   "before_dedup": len(found), "after_dedup": len(sites)}


def dinucleotide_counts(sequences: Iterable[str], site: SiteKind, upstream_bp: int) -> dict:
    """What the windows' sites carry: ``{"canonical", "counts" (each dinucleotide, most common first),
    "canonical_share", "known_minor" (GC, AT for donors; AC for acceptors), "other"}``."""
    counts = Counter(site.in_window(seq, upstream_bp) for seq in sequences)
    total = sum(counts.values())
    minor = sum(counts[d] for d in site.known)
    return {"canonical": site.canonical, "counts": dict(counts.most_common()),
            "canonical_share": round(counts[site.canonical] / total, 6) if total else None,
            "known_minor": {d: counts[d] for d in site.known},
            "other": total - counts[site.canonical] - minor}
