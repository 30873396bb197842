"""GT/AG-matched decoys for the splice tasks: windows cut exactly like a positive's, at the same
dinucleotide, where no site of the annotation is.

A decoy donor is a ``GT`` (an acceptor decoy an ``AG``) read on a transcript's strand, both bases
inside that transcript (exon or intron), whose cut (:class:`~bigbird_dna.data.annotation.splice_sites.SiteKind`)
is at least ``min_site_distance_bp`` from every annotated site of the same kind on either strand,
and whose window lies inside one split's region. Its window is built as a positive's
(:func:`~bigbird_dna.data.annotation.samples.window_at_cut`), so the dinucleotide sits at the same
offset: a model cannot tell the classes apart by it.

Every candidate of a split is enumerated (one pass over the genic bases of each region, both
strands), and decoys are drawn uniformly without replacement from them in the order of
``rng.permutation``; those with more than ``max_n_fraction`` ambiguous bases are skipped. Fewer
candidates than requested is a shortfall, reported, not raised.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from bigbird_dna.data.annotation.gff import Transcript
from bigbird_dna.data.annotation.negatives import SiteIndex
from bigbird_dna.data.annotation.samples import Sample, WindowSettings, window_at_cut
from bigbird_dna.data.annotation.splice_sites import SiteKind
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement


def genic_spans(transcripts: Iterable[Transcript]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    """The bases inside some transcript, per ``(record, strand)``: sorted, merged ``[start, end)``."""
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for t in sorted(transcripts, key=lambda t: (t.record, t.strand, t.start, t.end)):
        merged = spans.setdefault((t.record, t.strand), [])
        if merged and t.start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], t.end))
        else:
            merged.append((t.start, t.end))
    return spans


def dinucleotide_positions(sequence: str, dinucleotide: str) -> np.ndarray:
    """Indices ``i`` (int64 ``[K]``) with ``sequence[i:i + 2] == dinucleotide`` (same case)."""
    codes = np.frombuffer(sequence.encode("ascii"), dtype=np.uint8)
    first, second = dinucleotide.encode("ascii")
    return np.flatnonzero((codes[:-1] == first) & (codes[1:] == second)).astype(np.int64)


def decoy_cuts(genome: GenomeReader, spans: dict[tuple[str, str], list[tuple[int, int]]], region: Region,
               strand: str, site: SiteKind, settings: WindowSettings, annotated: SiteIndex,
               min_site_distance_bp: int) -> np.ndarray:
    """Cuts (int64 ``[K]``, sorted) of the decoy candidates of ``region`` on ``strand`` (see the module
    docstring): the canonical dinucleotide inside a transcript, a full window inside ``region``, far
    enough from every annotated site of the kind."""
    pattern = site.forward_dinucleotide(strand)
    found = []
    for lo, hi in spans.get((region.record, strand), ()):
        lo, hi = max(lo, region.start), min(hi, region.end)
        if hi - lo >= 2:
            found.append(lo + dinucleotide_positions(genome.fetch(region.record, lo, hi), pattern))
    if not found:
        return np.zeros(0, dtype=np.int64)
    cuts = site.cut_at(np.concatenate(found), strand)
    start, end = window_at_cut(cuts, strand, settings.upstream_bp, settings.downstream_bp)
    cuts = cuts[(start >= region.start) & (end <= region.end)]
    return cuts[annotated.nearest(region.record, cuts) >= min_site_distance_bp]


def sample_decoys(genome: GenomeReader, spans: dict[tuple[str, str], list[tuple[int, int]]],
                  regions: Sequence[Region], count: int, site: SiteKind, settings: WindowSettings,
                  annotated: SiteIndex, min_site_distance_bp: int,
                  rng: np.random.Generator) -> tuple[list[Sample], dict]:
    """``count`` decoy windows (label 0, kind ``decoy``) inside ``regions`` (one split's).

    Returns:
        ``(samples, stats)``: stats with ``requested``, ``found``, ``shortfall``, ``candidates`` and
        ``rejected`` (``too_many_n``).
    """
    groups = [(region.record, strand, decoy_cuts(genome, spans, region, strand, site, settings, annotated,
                                                 min_site_distance_bp))
              for region in regions for strand in "+-"]
    ends = np.cumsum([len(cuts) for _, _, cuts in groups])
    total = int(ends[-1]) if len(ends) else 0
    out: list[Sample] = []
    too_many_n = 0
    for index in (rng.permutation(total) if total else ()):
        if len(out) == count:
            break
        g = int(np.searchsorted(ends, index, side="right"))
        record, strand, cuts = groups[g]
        cut = int(cuts[index - (ends[g - 1] if g else 0)])
        start, end = window_at_cut(cut, strand, settings.upstream_bp, settings.downstream_bp)
        seq = genome.fetch(record, start, end)
        if ambiguous_fraction(seq) > settings.max_n_fraction:
            too_many_n += 1
            continue
        out.append(Sample(reverse_complement(seq) if strand == "-" else seq, 0, record, start, end, strand, "decoy"))
    return out, {"requested": count, "found": len(out), "shortfall": count - len(out), "candidates": total,
                 "rejected": {"too_many_n": too_many_n}}
