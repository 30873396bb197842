"""One picture per explained region: the attribution as a sequence logo above an ISM heatmap.

The logo draws each base's letter with the height of its per-base attribution (above the axis
when it raises the target, below when it lowers it; for ISM, how much the observed base raises the
target over the mean letter). The heatmap shows every single-base change,
``f(mutant) - f(x)`` for each letter (rows ``A, C, G, T``), on a colour scale centred on 0 (red:
the change raises the target, blue: lowers it); the observed letters are the zeros. The x axis is
the genome coordinate of each base (0-based); the title names the region, the model's score and
the method. Drawn with logomaker and matplotlib (the ``explain`` extra).
"""

from __future__ import annotations

import os

import numpy as np

from bigbird_dna.errors import require_extra

LETTERS = "ACGT"
# Longest region drawn: past this a logo is unreadable and ISM costs 3 passes per base.
MAX_FIGURE_BP = 1000


def draw_region(path: str | os.PathLike, seq: str, per_base: np.ndarray, ism: np.ndarray, positions: np.ndarray,
                title: str, attribution_label: str, ism_label: str) -> None:
    """Write the PNG of one region to ``path``.

    Args:
        seq: the region's bases as explained (``L``).
        per_base: float ``[L]`` per-base attributions, drawn as each base's letter.
        ism: float ``[L, 4]`` ISM deltas.
        positions: ``[L]`` the genome coordinate (0-based) of each base, for the x axis labels
            (decreasing for a region read on the ``-`` strand).
        title: the figure's title; ``attribution_label``, ``ism_label``: the two y axes' labels.
    """
    logomaker = require_extra("logomaker", "explain", "the region figures (--png-dir)")
    pyplot = require_extra("matplotlib.pyplot", "explain", "the region figures (--png-dir)")
    import pandas

    length = len(seq)
    hot = np.array([[base == letter for letter in LETTERS] for base in seq.upper()], dtype=float)
    frame = pandas.DataFrame(np.nan_to_num(per_base)[:, None] * hot, columns=list(LETTERS))
    width = min(24.0, max(6.0, length / 12))
    figure, (top, bottom) = pyplot.subplots(2, 1, figsize=(width, 4.4), sharex=True, layout="constrained",
                                            gridspec_kw={"height_ratios": [1.3, 1]})
    try:
        logomaker.Logo(frame, ax=top, color_scheme="classic", flip_below=False)
        top.axhline(0, color="0.4", linewidth=0.6)
        top.set_ylabel(attribution_label)
        top.set_title(title, fontsize=10)
        limit = float(np.nanmax(np.abs(ism))) if np.isfinite(ism).any() else 1.0
        image = bottom.imshow(np.nan_to_num(ism).T, aspect="auto", cmap="RdBu_r", vmin=-limit, vmax=limit,
                              extent=(-0.5, length - 0.5, 3.5, -0.5), interpolation="nearest")
        bottom.set_yticks(range(4), list(LETTERS))
        bottom.set_ylabel("ISM: mutant letter")
        ticks = np.linspace(0, length - 1, num=min(length, 8)).round().astype(int)
        bottom.set_xticks(ticks, [f"{positions[i]:,}" for i in ticks])
        bottom.set_xlabel("genome position (0-based)")
        figure.colorbar(image, ax=bottom, location="right", fraction=0.03, pad=0.01, label=ism_label)
        figure.savefig(path, dpi=110)
    finally:
        pyplot.close(figure)
