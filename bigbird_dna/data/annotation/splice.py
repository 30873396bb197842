"""The splice-site tasks of an annotated genome: donor (or acceptor) windows against GT/AG-matched decoys.

**Positives.** Every distinct site of the chosen kind of the transcripts' introns
(:mod:`~bigbird_dna.data.annotation.splice_sites`), deduplicated on ``(record, strand, cut)``, gives
the window of ``upstream_bp`` bases 5' and ``downstream_bp`` bases 3' of the exon-intron (donor)
or intron-exon (acceptor) boundary, read on the transcript's strand (reverse complement on ``-``)::

    + strand: [cut - upstream_bp, cut + downstream_bp)
    - strand: [cut - downstream_bp, cut + upstream_bp), reverse-complemented

so ``seq[upstream_bp]`` is the first intron base of a donor (``seq[upstream_bp:upstream_bp + 2]``
is ``GT`` at a canonical donor) and the first exon base after an acceptor
(``seq[upstream_bp - 2:upstream_bp]`` is ``AG``). Windows past a record end, across a split
boundary or with more than ``max_n_fraction`` ambiguous bases are dropped and counted, as for
promoters. The manifest's ``dinucleotides`` counts what the positives carry at that offset
(GT-AG, GC-AG, AT-AC, other); non-canonical positives are kept unless ``keep_noncanonical=False``
(then dropped and counted as ``noncanonical``).

**Negatives**, ``round(ratio * positives)`` of each kind per split:
``decoy`` (:mod:`~bigbird_dna.data.annotation.decoys`): the same dinucleotide at the same offset,
on a transcript's strand inside it, at least ``min_site_distance_bp`` from every annotated site of
the kind; ``background`` (:func:`~bigbird_dna.data.annotation.negatives.sample_background`):
genomic windows on a random strand with no annotated site of the kind within
``max(min_site_distance_bp, upstream_bp, downstream_bp)``. Each (split, kind) draws from
``default_rng([seed, split, kind])``.

**Splits**: :mod:`~bigbird_dna.data.annotation.split`, as for promoters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np

from bigbird_dna.data.annotation.decoys import genic_spans, sample_decoys
from bigbird_dna.data.annotation.gff import Annotation
from bigbird_dna.data.annotation.negatives import SiteIndex, sample_background
from bigbird_dna.data.annotation.samples import (
    Sample,
    TaskData,
    WindowSettings,
    add_negatives,
    finish_task,
    require_positives,
    site_samples,
)
from bigbird_dna.data.annotation.splice_sites import SITES, dinucleotide_counts, splice_sites
from bigbird_dna.data.annotation.split import SplitLocator, task_splits
from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.splits import SPLITS

NEGATIVE_KINDS = ("decoy", "background")


@dataclass(frozen=True)
class SpliceSettings(WindowSettings):
    """How to build a splice task (see the module docstring): ``site`` is ``donor`` or ``acceptor``;
    distances in bp."""

    site: str = "donor"
    upstream_bp: int = 200
    downstream_bp: int = 200
    negatives: dict[str, float] = field(default_factory=lambda: {"decoy": 1.0, "background": 0.0})
    min_site_distance_bp: int = 50
    keep_noncanonical: bool = True

    NEGATIVE_KINDS: ClassVar[tuple[str, ...]] = NEGATIVE_KINDS
    MIN_FLANK_BP: ClassVar[tuple[int, int]] = (2, 2)  # both dinucleotides fit either side of the cut

    def check(self) -> None:
        """Raise :class:`InputError` for settings that cannot work."""
        super().check()
        if self.site not in SITES:
            raise InputError(f"splice site {self.site!r}: choose donor or acceptor.")
        if self.min_site_distance_bp < 1:
            raise InputError(f"min_site_distance_bp={self.min_site_distance_bp}: must be >= 1, or a decoy could "
                             "sit on an annotated site.")


def build_splice_task(genome: GenomeReader, annotation: Annotation, settings: SpliceSettings, seed: int,
                      progress: Callable[[str], None] = lambda message: None) -> TaskData:
    """Build the splice donor or acceptor task in memory, deterministically from ``seed``.

    Args:
        genome: the FASTA the annotation was read against.
        annotation: from :func:`~bigbird_dna.data.annotation.gff.read_annotation`.
        settings: site kind, window, negatives and split settings.
        seed: seeds every random choice.
        progress: called with a short message at each phase.

    Raises:
        InputError: bad settings or splits, an annotation without any intron, or a train/val split
            left without positives.
    """
    settings.check()
    site = SITES[settings.site]
    sites, site_report = splice_sites(annotation.transcripts, site)
    if not sites:
        raise InputError(f"{annotation.path} has no intron: none of its {len(annotation.transcripts)} transcripts "
                         "has two or more exons, so there is no splice site. Give an annotation with exon features "
                         "(GFF3 exon lines with Parent=TRANSCRIPT_ID; GTF exon lines with transcript_id).")
    regions = task_splits(genome.record_lengths, settings.val_records, settings.test_records,
                          settings.holdout_fraction, settings.window_bp)
    progress(f"{site.name} windows around {len(sites)} deduplicated sites")
    samples, dropped = site_samples(genome, sites, settings, SplitLocator(regions), site.name)
    positives = [s for split in SPLITS for s in samples[split]]
    dinucleotides = dinucleotide_counts((s.sequence for s in positives), site, settings.upstream_bp)
    dinucleotides["noncanonical_kept"] = settings.keep_noncanonical
    dropped["noncanonical"] = 0
    if not settings.keep_noncanonical:
        for split in SPLITS:
            kept = [s for s in samples[split] if site.in_window(s.sequence, settings.upstream_bp) == site.canonical]
            dropped["noncanonical"] += len(samples[split]) - len(kept)
            samples[split] = kept
    require_positives(samples, f"splice {site.name}")
    report: dict = {"sites": site_report, "dinucleotides": dinucleotides, "dropped": {site.name: dropped},
                    "window": {"bp": settings.window_bp, "cut_offset": settings.upstream_bp,
                               "dinucleotide_offset": settings.upstream_bp + site.offset}}
    annotated = SiteIndex((record, cut) for record, _, cut in sites)
    spans = genic_spans(annotation.transcripts)
    background_distance = max(settings.min_site_distance_bp, settings.upstream_bp, settings.downstream_bp)
    report["effective_site_distance_bp"] = {"decoy": settings.min_site_distance_bp, "background": background_distance}

    def draw(split: str, kind: str, count: int, rng: np.random.Generator) -> tuple[list[Sample], dict]:
        if kind == "decoy":
            return sample_decoys(genome, spans, regions[split], count, site, settings, annotated,
                                 settings.min_site_distance_bp, rng)
        got = sample_background(genome, regions[split], count, settings.window_bp, annotated, background_distance,
                                settings.max_n_fraction, rng)
        return [Sample(seq, 0, w.record, w.start, w.end, w.strand, kind)
                for w, seq in zip(got.windows, got.sequences)], got.stats()

    report["negatives"] = add_negatives(samples, settings, seed, draw, progress)
    return finish_task(samples, regions, report, genome.record_lengths, (site.name, *NEGATIVE_KINDS))
