"""The promoter task of an annotated genome: TSS windows (label 1) against named negatives (label 0).

**Positives.** Every transcript's TSS (:attr:`~bigbird_dna.data.annotation.gff.Transcript.tss`:
``start`` on ``+``, ``end - 1`` on ``-``), deduplicated on ``(record, strand, position)``, gives the
window of ``upstream_bp`` bases before and ``downstream_bp`` bases from the TSS, read on the
transcript's strand (reverse complement on ``-``), so ``seq[upstream_bp]`` is the TSS base::

    + strand: [tss - upstream_bp, tss + downstream_bp)
    - strand: [tss - downstream_bp + 1, tss + upstream_bp + 1), reverse-complemented

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
from typing import Callable

import numpy as np

from bigbird_dna.data.annotation.gff import Annotation
from bigbird_dna.data.annotation.negatives import TssIndex, sample_background, sample_gene_body
from bigbird_dna.data.annotation.shuffle import dinucleotide_shuffle
from bigbird_dna.data.annotation.split import SplitLocator, drop_cross_split_overlaps, task_splits
from bigbird_dna.data.promoter.epdnew import Tss, promoter_window
from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.genome.splits import SPLITS

NEGATIVE_KINDS = ("background", "gene_body", "shuffled")
KINDS = ("promoter", *NEGATIVE_KINDS)


@dataclass(frozen=True)
class PromoterSettings:
    """How to build the task (see the module docstring); distances in bp."""

    upstream_bp: int = 250
    downstream_bp: int = 50
    negatives: dict[str, float] = field(default_factory=lambda: {"background": 1.0, "gene_body": 1.0,
                                                                 "shuffled": 0.0})
    min_tss_distance_bp: int = 2000
    gene_body_tss_distance_bp: int = 500
    max_n_fraction: float = 0.1
    holdout_fraction: float = 0.1
    val_records: tuple[str, ...] = ()
    test_records: tuple[str, ...] = ()

    @property
    def window_bp(self) -> int:
        return self.upstream_bp + self.downstream_bp

    def check(self) -> None:
        """Raise :class:`InputError` for settings that cannot work."""
        if self.upstream_bp < 0 or self.downstream_bp < 1:
            raise InputError(f"upstream {self.upstream_bp} / downstream {self.downstream_bp} bp: need upstream >= 0 "
                             "and downstream >= 1 (the window holds the TSS base).")
        unknown = set(self.negatives) - set(NEGATIVE_KINDS)
        if unknown:
            raise InputError(f"unknown negative kind(s) {sorted(unknown)}; choose among {', '.join(NEGATIVE_KINDS)} "
                             "(e.g. background=1,gene_body=1,shuffled=0).")
        bad = {k: v for k, v in self.negatives.items() if not (isinstance(v, (int, float)) and v >= 0)}
        if bad:
            raise InputError(f"negatives per positive must be numbers >= 0, got {bad}.")
        if not 0 <= self.max_n_fraction <= 1:
            raise InputError(f"max_n_fraction={self.max_n_fraction} must lie in [0, 1].")
        if self.min_tss_distance_bp < 0 or self.gene_body_tss_distance_bp < 0:
            raise InputError("TSS distances must be >= 0 bp.")


@dataclass(frozen=True)
class Sample:
    """One labelled window: ``[start, end)`` of ``record`` (0-based, half-open, forward strand),
    ``sequence`` read on ``strand``."""

    sequence: str
    label: int
    record: str
    start: int
    end: int
    strand: str
    kind: str


@dataclass
class PromoterTaskData:
    """The built task: ``samples`` per split, the split ``regions`` and a ``report`` for the manifest."""

    samples: dict[str, list[Sample]]
    regions: dict[str, list[Region]]
    report: dict


def _positives(genome: GenomeReader, annotation: Annotation, settings: PromoterSettings, locator: SplitLocator,
               report: dict) -> dict[str, list[Sample]]:
    sites = sorted({(t.record, t.strand, t.tss) for t in annotation.transcripts})
    report["tss"] = {"transcripts": len(annotation.transcripts), "before_dedup": len(annotation.transcripts),
                     "after_dedup": len(sites)}
    dropped = {"outside_record": 0, "crossing_split_boundary": 0, "too_many_n": 0}
    out: dict[str, list[Sample]] = {split: [] for split in SPLITS}
    for record, strand, position in sites:
        w = promoter_window(Tss(record, position, strand), settings.upstream_bp, settings.downstream_bp)
        if w.start < 0 or w.end > genome.record_lengths[record]:
            dropped["outside_record"] += 1
            continue
        split = locator.split_of(record, w.start, w.end)
        if split is None:
            dropped["crossing_split_boundary"] += 1
            continue
        seq = genome.fetch(record, w.start, w.end)
        if ambiguous_fraction(seq) > settings.max_n_fraction:
            dropped["too_many_n"] += 1
            continue
        seq = reverse_complement(seq) if strand == "-" else seq
        out[split].append(Sample(seq, 1, record, w.start, w.end, strand, "promoter"))
    report["dropped"] = {"promoter": dropped}
    return out


def _shuffled(positives: list[Sample], count: int, rng: np.random.Generator) -> list[Sample]:
    if not positives or not count:
        return []
    whole, rest = divmod(count, len(positives))
    sources = [*range(len(positives))] * whole + sorted(rng.choice(len(positives), rest, replace=False).tolist())
    return [Sample(dinucleotide_shuffle(positives[i].sequence, rng), 0, positives[i].record, positives[i].start,
                   positives[i].end, positives[i].strand, "shuffled") for i in sources]


def build_promoter_task(genome: GenomeReader, annotation: Annotation, settings: PromoterSettings, seed: int,
                        progress: Callable[[str], None] = lambda message: None) -> PromoterTaskData:
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
    report: dict = {}
    progress("promoter windows around deduplicated TSSs")
    samples = _positives(genome, annotation, settings, SplitLocator(regions), report)
    for split in ("train", "val"):
        if not samples[split]:
            raise InputError(f"the {split} split holds no promoter window: no TSS of the annotation lies inside its "
                             "regions. Change --holdout-fraction or the --val-records/--test-records lists.")
    tss = TssIndex((t.record, t.tss) for t in annotation.transcripts)
    reach = max(settings.upstream_bp, settings.downstream_bp)
    distances = {"background": max(settings.min_tss_distance_bp, reach),
                 "gene_body": max(settings.gene_body_tss_distance_bp, reach)}
    report["effective_tss_distance_bp"] = distances
    negative_stats: dict[str, dict] = {}
    for s, split in enumerate(SPLITS):
        positives = list(samples[split])
        stats = negative_stats[split] = {}
        for k, kind in enumerate(NEGATIVE_KINDS):
            count = int(round(settings.negatives.get(kind, 0) * len(positives)))
            if not count:
                continue
            progress(f"{split}: {count} {kind} negatives")
            rng = np.random.default_rng([seed, s, k])
            if kind == "shuffled":
                found = _shuffled(positives, count, rng)
                stats[kind] = {"requested": count, "found": len(found), "shortfall": count - len(found)}
                samples[split] += found
                continue
            if kind == "background":
                draw = sample_background(genome, regions[split], count, settings.window_bp, tss, distances[kind],
                                         settings.max_n_fraction, rng)
            else:
                draw = sample_gene_body(genome, annotation.transcripts, regions[split], count, settings.window_bp,
                                        tss, distances[kind], settings.max_n_fraction, rng)
            stats[kind] = draw.stats()
            samples[split] += [Sample(seq, 0, w.record, w.start, w.end, w.strand, kind)
                               for w, seq in zip(draw.windows, draw.sequences)]
    report["negatives"] = negative_stats
    samples, crossing = drop_cross_split_overlaps(samples)
    report["dropped"]["overlapping_another_split"] = crossing
    order = {name: i for i, name in enumerate(genome.record_lengths)}
    for split in SPLITS:
        samples[split].sort(key=lambda x: (order[x.record], x.start, x.end, x.strand, KINDS.index(x.kind)))
    report["counts"] = {split: {kind: sum(x.kind == kind for x in samples[split]) for kind in KINDS}
                        for split in SPLITS}
    return PromoterTaskData(samples, regions, report)
