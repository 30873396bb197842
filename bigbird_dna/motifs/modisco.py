"""TF-MoDISco (``modisco-lite``) on attributions: the recurring patterns among high-attribution
stretches (seqlets) of many sequences.

Inputs are modisco's own layout: ``sequences`` one-hot ``[N, 4, L]`` (rows A, C, G, T) and
``attributions`` ``[N, 4, L]`` *hypothetical* contributions (what each base would contribute at each
position; the actual contribution is their product with the one-hot). Both float32, same shape.

Each :class:`Pattern` holds, over its aligned seqlets, ``ppm`` (base frequencies), ``cwm`` (mean
contributions) and ``hcwm`` (mean hypothetical contributions), all ``[W, 4]`` (columns A, C, G, T),
and its metacluster: ``positive`` (seqlets that raise the output) or ``negative``.

Needs the ``motifs`` extra (``modisco-lite``, which compiles numba kernels on its first run).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from bigbird_dna.errors import InputError, require_extra
from bigbird_dna.motifs.jaspar import MOTIFS_EXTRA

METACLUSTERS = {"pos_patterns": "positive", "neg_patterns": "negative"}


@dataclass(frozen=True)
class ModiscoSettings:
    """The TF-MoDISco parameters this package exposes; the others keep modisco-lite's defaults."""

    max_seqlets: int = 2000  # per metacluster (modisco-lite's own default is 20000)
    sliding_window_size: int = 21  # the core of a seqlet, bp
    flank_size: int = 10  # added on each side of a core, bp
    target_seqlet_fdr: float = 0.2
    min_metacluster_size: int = 100  # fewer seqlets of one sign: that metacluster is skipped
    final_min_cluster_size: int = 20  # smallest pattern kept, in seqlets
    n_leiden_runs: int = 50

    def __post_init__(self):
        small = {key: value for key, value in vars(self).items()
                 if value < (0 if key == "flank_size" else 1) and key != "target_seqlet_fdr"}
        if small or not 0 < self.target_seqlet_fdr < 1:
            raise InputError(f"TF-MoDISco settings out of range: {small or self.target_seqlet_fdr}; counts and "
                             "sizes must be positive (flank >= 0), the FDR between 0 and 1.")


@dataclass(frozen=True, eq=False)
class Pattern:
    """One TF-MoDISco pattern; arrays ``[W, 4]`` (A, C, G, T), positions 5'->3' as modisco aligned them."""

    name: str  # e.g. pos_patterns.pattern_0, as in modisco's own HDF5
    metacluster: str  # positive or negative
    ppm: np.ndarray  # base frequencies of the aligned seqlets
    cwm: np.ndarray  # mean contribution scores
    hcwm: np.ndarray  # mean hypothetical contribution scores
    seqlets: int

    def core(self, threshold: float = 0.3) -> slice:
        """The positions from the first to the last whose total ``|cwm|`` reaches ``threshold`` times
        the largest (how modisco-lite trims a pattern before matching it)."""
        score = np.abs(self.cwm).sum(axis=1)
        passing = np.flatnonzero(score >= threshold * score.max())
        return slice(int(passing[0]), int(passing[-1]) + 1)


def check_inputs(sequences: np.ndarray, attributions: np.ndarray, where: str = "the attributions") -> None:
    """Refuse arrays modisco cannot read: shapes other than one ``[N, 4, L]``, a non-one-hot
    ``sequences``, or non-finite attributions."""
    for label, array in (("sequences", sequences), ("attributions", attributions)):
        if array.ndim != 3 or array.shape[1] != 4:
            raise InputError(f"{where}: {label} has shape {list(array.shape)}; expected [N, 4, L] (rows A, C, G, T).")
    if sequences.shape != attributions.shape:
        raise InputError(f"{where}: sequences {list(sequences.shape)} and attributions {list(attributions.shape)} "
                         "must have the same shape [N, 4, L].")
    if not np.isin(sequences, (0, 1)).all() or (sequences.sum(axis=1) > 1).any():
        raise InputError(f"{where}: sequences is not one-hot (each position one 1 among A, C, G, T, or all 0 for N).")
    if not np.isfinite(attributions).all():
        raise InputError(f"{where}: attributions holds NaN or infinite values.")


def _patterns(found, key: str) -> list[Pattern]:
    return [Pattern(name=f"{key}.pattern_{i}", metacluster=METACLUSTERS[key], ppm=np.asarray(p.sequence),
                    cwm=np.asarray(p.contrib_scores), hcwm=np.asarray(p.hypothetical_contribs), seqlets=len(p.seqlets))
            for i, p in enumerate(found or [])]


def find_patterns(sequences: np.ndarray, attributions: np.ndarray, settings: ModiscoSettings = ModiscoSettings(),
                  save_to: str | os.PathLike | None = None) -> list[Pattern]:
    """The TF-MoDISco patterns of ``[N, 4, L]`` one-hot sequences and hypothetical contributions:
    positive metacluster first, each metacluster in modisco's order (most seqlets first). An empty
    list when too few seqlets stand out (e.g. random attributions).

    Args:
        save_to: also write modisco-lite's own HDF5 there (``modisco report`` reads it).
    """
    check_inputs(sequences, attributions)
    modiscolite = require_extra("modiscolite", MOTIFS_EXTRA, "TF-MoDISco")
    if sequences.shape[2] < settings.sliding_window_size + 2 * settings.flank_size:
        raise InputError(f"sequences of {sequences.shape[2]} bp are shorter than one seqlet "
                         f"({settings.sliding_window_size} + 2 x {settings.flank_size} bp); lower the window.")
    one_hot = np.ascontiguousarray(sequences.transpose(0, 2, 1), dtype=np.float32)  # [N, L, 4], modisco's inside
    hypothetical = np.ascontiguousarray(attributions.transpose(0, 2, 1), dtype=np.float32)
    positive, negative = modiscolite.tfmodisco.TFMoDISco(
        one_hot, hypothetical, max_seqlets_per_metacluster=settings.max_seqlets,
        sliding_window_size=settings.sliding_window_size, flank_size=settings.flank_size,
        target_seqlet_fdr=settings.target_seqlet_fdr, min_metacluster_size=settings.min_metacluster_size,
        final_min_cluster_size=settings.final_min_cluster_size, n_leiden_runs=settings.n_leiden_runs)
    if save_to is not None:
        modiscolite.io.save_hdf5(str(save_to), positive, negative, sequences.shape[2])
    return _patterns(positive, "pos_patterns") + _patterns(negative, "neg_patterns")
