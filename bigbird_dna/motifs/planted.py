"""Planted-motif tasks: real genome windows, half of them carrying JASPAR motif instances, so that
what a model (and its attributions) should find is known exactly.

Backgrounds are windows of a genome FASTA (default the bundled *H. pylori* genome): they do not
overlap one another, hold only A, C, G and T, are read on the forward strand, and each is used
once. Each motif instance is **sampled** from its JASPAR PFM (every base drawn from its position's
probabilities), so instances vary as real sites do, and written over the background.

Rules (``PlantedSettings.rule``):

- ``presence``: each positive carries one instance of every listed motif (random positions, not
  overlapping, each on a random strand); each negative is an unplanted window (same genome, same
  length distribution). Kinds: ``positive``, ``background``.
- ``one_of``: as ``presence``, but each positive carries one instance of ONE of the listed motifs,
  chosen uniformly, so a model must learn every motif (with ``presence`` one of them suffices), and
  each positive's planted bases are exactly one motif's.
- ``spacing``: two motifs A and B form a composite ``A, gap, B`` read on a random strand (so on
  the reverse strand the forward sequence reads ``rc(B), gap, rc(A)``) at a random position.
  Positives have a gap (B's start minus A's end, in the composite's orientation) in ``spacing``
  (default 10-20 bp). Negatives carry the same two sampled instances, built the same way, but either
  ``far`` (gap in ``far_spacing``, default 40-80 bp) or ``swapped`` (B, gap, A with a gap in
  ``spacing``), half each by default. Every sequence of either label thus holds exactly one instance
  of A and one of B, so motif presence alone (a convolution with global max pooling) cannot
  separate the classes; only their relative position can. If both A and B are palindromes,
  ``swapped`` negatives are positives read on the other strand: use ``negatives=("far",)``. One
  weak cue remains beside the spacing: a ``far`` composite is longer, so it has less room, and its
  motifs sit slightly less often within a few bp of the sequence ends.

Every random draw comes from one ``numpy`` generator seeded by ``seed``: the same settings, genome
and JASPAR release give the same task. Coordinates are 0-based, half-open: a :class:`Site` is in
its sequence's coordinates, a window in the genome record's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.motifs.jaspar import Motif
from bigbird_dna.motifs.pwm import sample_instance

RULES = ("presence", "one_of", "spacing")
SPACING_NEGATIVES = ("far", "swapped")
SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class PlantedSettings:
    """What to generate. Ranges are inclusive ``(low, high)`` pairs, in bp."""

    rule: str = "presence"
    num: int = 2000  # sequences in all, half positives
    length: tuple[int, int] = (200, 200)  # each sequence's length, uniform in the range
    spacing: tuple[int, int] = (10, 20)  # spacing rule: the gap between A's end and B's start in positives
    far_spacing: tuple[int, int] = (40, 80)  # spacing rule: the gap of "far" negatives
    negatives: tuple[str, ...] = SPACING_NEGATIVES  # spacing rule: kinds of negatives, in equal shares
    val_fraction: float = 0.1
    test_fraction: float = 0.1
    seed: int = 0


@dataclass(frozen=True)
class Site:
    """A planted instance: ``[start, end)`` of its sequence, the strand it reads on, its motif ID."""

    start: int
    end: int
    strand: str
    motif_id: str


@dataclass
class PlantedSequence:
    """One labelled sequence and where it came from: ``record:[start, end)`` of the genome."""

    name: str  # SPLIT_NNNNNN, numbered in file order
    split: str
    sequence: str
    label: int
    kind: str  # positive, background, far or swapped
    record: str
    start: int
    end: int
    sites: list[Site] = field(default_factory=list)


def _check_range(name: str, value: tuple[int, int], low: int) -> None:
    if len(value) != 2 or not low <= value[0] <= value[1]:
        raise InputError(f"{name} must be a range LOW-HIGH with {low} <= LOW <= HIGH, got {value}.")


def _check(settings: PlantedSettings, motifs: list[Motif]) -> None:
    if settings.rule not in RULES:
        raise InputError(f"unknown rule {settings.rule!r}; choose among {', '.join(RULES)}.")
    if settings.num < 2:
        raise InputError(f"need at least 2 sequences (one per label), got {settings.num}.")
    _check_range("length", settings.length, 1)
    if not (0 <= settings.val_fraction and 0 <= settings.test_fraction
            and settings.val_fraction + settings.test_fraction < 1):
        raise InputError(f"val and test fractions must be >= 0 and sum to less than 1, got "
                         f"{settings.val_fraction} and {settings.test_fraction}.")
    if settings.rule in ("presence", "one_of"):
        if not motifs:
            raise InputError(f"the {settings.rule} rule needs at least one motif (--motif ID).")
        needed = sum(m.length for m in motifs) if settings.rule == "presence" else max(m.length for m in motifs)
    else:
        if len(motifs) != 2:
            raise InputError(f"the spacing rule needs exactly two motifs, A then B (--motif A --motif B); got "
                             f"{len(motifs)}.")
        _check_range("spacing", settings.spacing, 0)
        _check_range("far spacing", settings.far_spacing, 0)
        if not settings.negatives or set(settings.negatives) - set(SPACING_NEGATIVES):
            raise InputError(f"spacing negatives must be among {', '.join(SPACING_NEGATIVES)}, got "
                             f"{settings.negatives}.")
        if "far" in settings.negatives and settings.far_spacing[0] <= settings.spacing[1]:
            raise InputError(f"far spacing {settings.far_spacing} must start above the positives' spacing "
                             f"{settings.spacing}.")
        if "swapped" in settings.negatives and motifs[0].id == motifs[1].id:
            raise InputError("with A = B, swapped negatives are positives; use --spacing-negatives far.")
        gap = max(settings.spacing[1], settings.far_spacing[1] if "far" in settings.negatives else 0)
        needed = motifs[0].length + motifs[1].length + gap
    if settings.length[0] < needed:
        raise InputError(f"sequences of {settings.length[0]} bp cannot hold the planted motifs ({needed} bp with "
                         "the largest gap); raise --length.")


def sample_windows(genome: GenomeReader, count: int, length: tuple[int, int],
                   rng: np.random.Generator) -> list[tuple[str, int, int]]:
    """``count`` windows ``(record, start, end)``, 0-based half-open, lengths uniform in ``length``:
    each in its own slot of ``length[1]`` bp (so no two overlap), slots drawn without replacement,
    windows with a base other than A, C, G, T skipped."""
    slot = length[1]
    records = [(name, size // slot) for name, size in genome.record_lengths.items() if size >= slot]
    offsets = np.cumsum([0] + [n for _, n in records])
    if offsets[-1] < count:
        raise InputError(f"{genome.path} has room for {offsets[-1]} windows of {slot} bp that do not overlap; "
                         f"{count} are needed. Lower --num or --length, or use a larger genome.")
    candidates = rng.choice(int(offsets[-1]), size=min(int(offsets[-1]), 3 * count + 100), replace=False)
    windows = []
    for candidate in candidates:
        index = int(np.searchsorted(offsets, candidate, side="right")) - 1
        size = int(rng.integers(length[0], length[1] + 1))
        start = int(candidate - offsets[index]) * slot + int(rng.integers(0, slot - size + 1))
        record = records[index][0]
        if set(genome.fetch(record, start, start + size)) <= set("ACGT"):
            windows.append((record, start, start + size))
            if len(windows) == count:
                return windows
    raise InputError(f"only {len(windows)} of {len(candidates)} windows drawn from {genome.path} hold only A, C, "
                     f"G and T; {count} are needed. Use a genome with fewer N, or lower --num.")


def _write(seq: str, instance: str, start: int) -> str:
    return seq[:start] + instance + seq[start + len(instance):]


def _place(background: str, parts: list[tuple[Motif, str, str]], starts: list[int]) -> tuple[str, list[Site]]:
    """Write each ``(motif, instance, strand)`` at its start (``instance`` 5'->3' on ``strand``)."""
    seq, sites = background, []
    for (motif, instance, strand), start in zip(parts, starts):
        seq = _write(seq, instance if strand == "+" else reverse_complement(instance), start)
        sites.append(Site(start, start + motif.length, strand, motif.id))
    return seq, sorted(sites, key=lambda s: s.start)


def plant_presence(background: str, motifs: list[Motif], rng: np.random.Generator) -> tuple[str, list[Site]]:
    """One instance of every motif at random non-overlapping positions, each on a random strand."""
    for _ in range(1000):
        starts = [int(rng.integers(0, len(background) - m.length + 1)) for m in motifs]
        spans = sorted((s, s + m.length) for s, m in zip(starts, motifs))
        if all(a_end <= b_start for (_, a_end), (b_start, _) in zip(spans, spans[1:])):
            break
    else:
        raise InputError(f"could not place {len(motifs)} motifs without overlap in {len(background)} bp; raise "
                         "--length.")
    parts = [(m, sample_instance(m.pfm, rng), "+" if rng.random() < 0.5 else "-") for m in motifs]
    return _place(background, parts, starts)


def plant_pair(background: str, first: Motif, second: Motif, gap: int,
               rng: np.random.Generator) -> tuple[str, list[Site]]:
    """The composite ``first, gap bp, second`` on a random strand at a random position."""
    total = first.length + gap + second.length
    origin = int(rng.integers(0, len(background) - total + 1))
    strand = "+" if rng.random() < 0.5 else "-"
    parts = [(first, sample_instance(first.pfm, rng), strand), (second, sample_instance(second.pfm, rng), strand)]
    if strand == "+":
        starts = [origin, origin + first.length + gap]
    else:  # the composite reversed: second's reverse complement comes first on the forward strand
        starts = [origin + second.length + gap, origin]
    return _place(background, parts, starts)


def _plant(kind: str, background: str, motifs: list[Motif], settings: PlantedSettings,
           rng: np.random.Generator) -> tuple[str, list[Site]]:
    if kind == "background":
        return background, []
    if settings.rule == "presence":
        return plant_presence(background, motifs, rng)
    if settings.rule == "one_of":
        return plant_presence(background, [motifs[int(rng.integers(len(motifs)))]], rng)
    a, b = motifs
    gap_range = settings.far_spacing if kind == "far" else settings.spacing
    gap = int(rng.integers(gap_range[0], gap_range[1] + 1))
    return plant_pair(background, *((b, a) if kind == "swapped" else (a, b)), gap, rng)


def _split_sizes(count: int, settings: PlantedSettings) -> dict[str, int]:
    val, test = round(count * settings.val_fraction), round(count * settings.test_fraction)
    return {"train": count - val - test, "val": val, "test": test}


def planted_task(genome: GenomeReader, motifs: list[Motif],
                 settings: PlantedSettings) -> dict[str, list[PlantedSequence]]:
    """The sequences of each split, positives and negatives shuffled together; each class is split by
    the fractions on its own, so every split keeps the 50/50 balance. See the module docstring."""
    _check(settings, motifs)
    rng = np.random.default_rng(settings.seed)
    windows = sample_windows(genome, settings.num, settings.length, rng)
    positives = settings.num // 2
    negative_kinds = settings.negatives if settings.rule == "spacing" else ("background",)
    kinds = ["positive"] * positives + [negative_kinds[i % len(negative_kinds)]
                                        for i in range(settings.num - positives)]
    by_split: dict[str, list[PlantedSequence]] = {split: [] for split in SPLITS}
    for label, members in ((1, range(positives)), (0, range(positives, settings.num))):
        order = rng.permutation(list(members))
        sizes = _split_sizes(len(order), settings)
        bounds = np.cumsum([0] + [sizes[s] for s in SPLITS])
        for split, low, high in zip(SPLITS, bounds, bounds[1:]):
            for i in order[low:high]:
                record, start, end = windows[i]
                seq, sites = _plant(kinds[i], genome.fetch(record, start, end), motifs, settings, rng)
                by_split[split].append(PlantedSequence("", split, seq, label, kinds[i], record, start, end, sites))
    for split, items in by_split.items():
        items[:] = [items[i] for i in rng.permutation(len(items))]
        for number, item in enumerate(items):
            item.name = f"{split}_{number:06d}"
    return by_split


def settings_dict(settings: PlantedSettings) -> dict:
    """The settings as JSON-ready values (ranges as lists)."""
    return {key: list(value) if isinstance(value, tuple) else value for key, value in asdict(settings).items()}
