"""The motif report folder that ``python -m bigbird_dna.motifs learn`` writes:

- ``report.md`` and ``report.html``: one row per pattern: the logo of its CWM (its core, see
  :meth:`~bigbird_dna.motifs.modisco.Pattern.core`), its seqlet count, its best JASPAR matches
  (ID, name, q-value) and the logo of the best one, drawn on the strand that matched;
- ``patterns.json``: the same, machine-readable, with the full ``ppm`` and ``cwm`` ``[W, 4]``
  (A, C, G, T) of each pattern, its core ``[start, end)`` and every match's p-, q- and E-value;
- ``logos/``: the PNG logos (logomaker); ``modisco.h5``: modisco-lite's own results.

Needs the ``motifs`` extra (``logomaker``, with matplotlib).
"""

from __future__ import annotations

import html
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from bigbird_dna.errors import require_extra
from bigbird_dna.motifs.jaspar import BASES, MOTIFS_EXTRA, Motif
from bigbird_dna.motifs.modisco import Pattern
from bigbird_dna.motifs.pwm import reverse_complement_pfm
from bigbird_dna.motifs.tomtom import Match


def information_content(pfm: np.ndarray) -> np.ndarray:
    """``[L]`` bits of each position of a ``[L, 4]`` probability matrix against a uniform background."""
    p = np.clip(pfm, 1e-9, 1.0)
    return 2.0 + (pfm * np.log2(p)).sum(axis=1)


def draw_logo(matrix: np.ndarray, path: Path, ylabel: str) -> None:
    """A logo PNG of a ``[L, 4]`` matrix (letter heights = values; negative ones drawn below the axis)."""
    require_extra("logomaker", MOTIFS_EXTRA, "drawing sequence logos")
    import logomaker
    import matplotlib

    matplotlib.use("Agg")  # files only; no display
    import matplotlib.pyplot as plt
    import pandas as pd

    fig, ax = plt.subplots(figsize=(0.35 * len(matrix) + 1.0, 1.6))
    logomaker.Logo(pd.DataFrame(matrix, columns=list(BASES)), ax=ax)
    ax.set_ylabel(ylabel)
    ax.set_xticks([])
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _motif_logo(folder: Path, motif: Motif, strand: str) -> str:
    """The logo of a JASPAR motif (probability x information content) on ``strand``; its relative path."""
    name = f"logos/{motif.id}{'' if strand == '+' else '_rc'}.png"
    if not (folder / name).exists():
        pfm = motif.pfm if strand == "+" else reverse_complement_pfm(motif.pfm)
        draw_logo(pfm * information_content(pfm)[:, None], folder / name, "bits")
    return name


def pattern_rows(folder: Path, patterns: list[Pattern], matches: list[list[Match]],
                 motifs: dict[str, Motif]) -> list[dict[str, Any]]:
    """Draw the logos into ``folder/logos`` and return each pattern's JSON-ready record."""
    (folder / "logos").mkdir(exist_ok=True)
    rows = []
    for pattern, found in zip(patterns, matches):
        core = pattern.core()
        logo = f"logos/{pattern.name}.png"
        draw_logo(pattern.cwm[core], folder / logo, "contribution")
        rows.append({
            "name": pattern.name, "metacluster": pattern.metacluster, "seqlets": pattern.seqlets,
            "core": [core.start, core.stop], "consensus": "".join(BASES[i] for i in pattern.ppm[core].argmax(axis=1)),
            "logo": logo, "ppm": pattern.ppm.round(5).tolist(), "cwm": pattern.cwm.round(6).tolist(),
            "matches": [asdict(m) | {"logo": _motif_logo(folder, motifs[m.motif_id], m.strand) if i == 0 else None}
                        for i, m in enumerate(found)],
        })
    return rows


def _matches_text(row: dict[str, Any]) -> str:
    return "; ".join(f"{m['motif_id']} {m['name']} (q={m['q_value']:.2g})" for m in row["matches"]) or "none"


def markdown(summary: dict[str, Any]) -> str:
    """``report.md``: the inputs, then the pattern table."""
    lines = [f"# Motifs learned from {summary['input']['name']}", "", _header(summary), ""]
    if not summary["patterns"]:
        return "\n".join(lines + ["TF-MoDISco found no pattern: too few seqlets stood out from the attributions.", ""])
    lines += ["| pattern | CWM logo | seqlets | best JASPAR matches | best match |", "|---|---|---|---|---|"]
    for row in summary["patterns"]:
        best = row["matches"][0] if row["matches"] else None
        best_logo = f"![{best['motif_id']}]({best['logo']})" if best else ""
        lines.append(f"| {row['name']} ({row['metacluster']}) | ![{row['name']}]({row['logo']}) | {row['seqlets']} "
                     f"| {_matches_text(row)} | {best_logo} |")
    return "\n".join(lines + [""])


def html_page(summary: dict[str, Any]) -> str:
    """``report.html``: the same table as :func:`markdown`, as one HTML page."""
    cells = []
    for row in summary["patterns"]:
        best = row["matches"][0] if row["matches"] else None
        cells.append("<tr>" + "".join(f"<td>{c}</td>" for c in (
            html.escape(f"{row['name']} ({row['metacluster']})"), f'<img src="{row["logo"]}">', row["seqlets"],
            html.escape(_matches_text(row)), f'<img src="{best["logo"]}">' if best else "")) + "</tr>")
    table = ("<table><tr><th>pattern</th><th>CWM logo</th><th>seqlets</th><th>best JASPAR matches</th>"
             f"<th>best match</th></tr>{''.join(cells)}</table>" if cells else "<p>TF-MoDISco found no pattern.</p>")
    title = html.escape(f"Motifs learned from {summary['input']['name']}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body><h1>{title}</h1>"
            f"<p>{html.escape(_header(summary))}</p>{table}</body></html>\n")


def _header(summary: dict[str, Any]) -> str:
    source, jaspar = summary["input"], summary["jaspar"]
    return (f"{source['sequences']} sequences of {source['length']} bp; attributions by {source['method'] or '?'} "
            f"for target {source['target'] or '?'} of model {source['model'] or '?'}. Matched against "
            f"{jaspar['motifs']} {jaspar['release']} motifs (collection {jaspar['collection']}, taxon "
            f"{jaspar['taxon'] or 'all'}) with TOMTOM; q-values are Benjamini-Hochberg over each pattern's targets.")


def write_report(folder: Path, summary: dict[str, Any]) -> None:
    """``patterns.json``, ``report.md`` and ``report.html`` of ``summary`` (whose ``patterns`` come from
    :func:`pattern_rows`) into ``folder``."""
    (folder / "patterns.json").write_text(json.dumps(summary, indent=1) + "\n")
    (folder / "report.md").write_text(markdown(summary))
    (folder / "report.html").write_text(html_page(summary))
