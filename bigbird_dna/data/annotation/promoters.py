"""The promoter task of an annotated genome: TSS windows (label 1) against named negatives (label 0).

**Positives.** Every transcript's TSS (:attr:`~bigbird_dna.data.annotation.gff.Transcript.tss`:
``start`` on ``+``, ``end - 1`` on ``-``), deduplicated on ``(record, strand, position)``, gives the
window of ``upstream_bp`` bases before and ``downstream_bp`` bases from the TSS, read on the
transcript's strand (reverse complement on ``-``), so ``seq[upstream_bp]`` is the TSS base::

    + strand: [tss - upstream_bp, tss + downstream_bp)
    - strand: [tss - downstream_bp + 1, tss + upstream_bp + 1), reverse-complemented

(the TSS as the cut 5' of its base, :func:`~bigbird_dna.data.annotation.samples.window_at_cut`).
Windows past a record end, across a split boundary, or with more than ``max_n_fraction`` ambiguous
bases are dropped (and counted).

**Negatives**, ``round(ratio * positives)`` of each kind per split (``negatives={kind: ratio}``):
``background``, ``gene_body`` (:mod:`~bigbird_dna.data.annotation.negatives`) and ``shuffled``
(dinucleotide shuffles of the split's own positives). Background and gene-body windows keep at
least ``max(distance, upstream_bp, downstream_bp)`` from every TSS, which also keeps them off every
promoter window. Each (split, kind) draws from its own generator, ``default_rng([seed, split, kind])``.

**Splits**: :mod:`~bigbird_dna.data.annotation.split`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, ClassVar

import numpy as np

from bigbird_dna.data.annotation.gff import Annotation
from bigbird_dna.data.annotation.negatives import SiteIndex, sample_background, sample_gene_body
from bigbird_dna.data.annotation.samples import (
    Sample,
    TaskData,
    WindowSettings,
    add_negatives,
    finish_task,
    require_positives,
    site_samples,
)
from bigbird_dna.data.annotation.shuffle import dinucleotide_shuffle
from bigbird_dna.data.annotation.split import SplitLocator, task_splits
from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader

NEGATIVE_KINDS = ("background", "gene_body", "shuffled")
KINDS = ("promoter", *NEGATIVE_KINDS)


@dataclass(frozen=True)
class PromoterSettings(WindowSettings):
    """How to build the task (see the module docstring); distances in bp."""

    upstream_bp: int = 250
    downstream_bp: int = 50
    negatives: dict[str, float] = field(default_factory=lambda: {"background": 1.0, "gene_body": 1.0,
                                                                 "shuffled": 0.0})
    min_tss_distance_bp: int = 2000
    gene_body_tss_distance_bp: int = 500

    NEGATIVE_KINDS: ClassVar[tuple[str, ...]] = NEGATIVE_KINDS

    def check(self) -> None:
        """Raise :class:`InputError` for settings that cannot work."""
        super().check()
        if self.min_tss_distance_bp < 0 or self.gene_body_tss_distance_bp < 0:
            raise InputError("TSS distances must be >= 0 bp.")


def tss_cut(record: str, strand: str, tss: int) -> tuple[str, str, int]:
    """The site ``(record, strand, cut)`` of a TSS at base ``tss``: the cut 5' of it on its strand."""
    return record, strand, tss if strand == "+" else tss + 1


def _shuffled(positives: list[Sample], count: int, rng: np.random.Generator) -> list[Sample]:
    if not positives or not count:
        return []
    whole, rest = divmod(count, len(positives))
    sources = [*range(len(positives))] * whole + sorted(rng.choice(len(positives), rest, replace=False).tolist())
    return [Sample(dinucleotide_shuffle(positives[i].sequence, rng), 0, positives[i].record, positives[i].start,
                   positives[i].end, positives[i].strand, "shuffled") for i in sources]


def build_promoter_task(genome: GenomeReader, annotation: Annotation, settings: PromoterSettings, seed: int,
                        progress: Callable[[str], None] = lambda message: None) -> TaskData:
    """Build the promoter task in memory, deterministically from ``seed`` (same result on every rank).

    Args:
        genome: the FASTA the annotation was read against.
        annotation: from :func:`~bigbird_dna.data.annotation.gff.read_annotation`.
        settings: window, negatives and split settings.
        seed: seeds every random choice.
        progress: called with a short message at each phase.

    Raises:
        InputError: bad settings or splits, or a train/val split left without positives.
    """
    settings.check()
    regions = task_splits(genome.record_lengths, settings.val_records, settings.test_records,
                          settings.holdout_fraction, settings.window_bp)
    progress("promoter windows around deduplicated TSSs")
    sites = sorted({tss_cut(t.record, t.strand, t.tss) for t in annotation.transcripts})
    samples, dropped = site_samples(genome, sites, settings, SplitLocator(regions), "promoter")
    report: dict = {"tss": {"transcripts": len(annotation.transcripts), "before_dedup": len(annotation.transcripts),
                            "after_dedup": len(sites)},
                    "dropped": {"promoter": dropped}}
    require_positives(samples, "promoter")
    tss = SiteIndex((t.record, t.tss) for t in annotation.transcripts)
    reach = max(settings.upstream_bp, settings.downstream_bp)
    distances = {"background": max(settings.min_tss_distance_bp, reach),
                 "gene_body": max(settings.gene_body_tss_distance_bp, reach)}
    report["effective_tss_distance_bp"] = distances

    def draw(split: str, kind: str, count: int, rng: np.random.Generator) -> tuple[list[Sample], dict]:
        if kind == "shuffled":
            found = _shuffled([s for s in samples[split] if s.label], count, rng)
            return found, {"requested": count, "found": len(found), "shortfall": count - len(found)}
        if kind == "background":
            got = sample_background(genome, regions[split], count, settings.window_bp, tss, distances[kind],
                                    settings.max_n_fraction, rng)
        else:
            got = sample_gene_body(genome, annotation.transcripts, regions[split], count, settings.window_bp,
                                   tss, distances[kind], settings.max_n_fraction, rng)
        return [Sample(seq, 0, w.record, w.start, w.end, w.strand, kind)
                for w, seq in zip(got.windows, got.sequences)], got.stats()

    report["negatives"] = add_negatives(samples, settings, seed, draw, progress)
    return finish_task(samples, regions, report, genome.record_lengths, KINDS)
