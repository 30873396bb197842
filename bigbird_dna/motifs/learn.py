"""From an attribution file to a motif report: TF-MoDISco patterns (:mod:`~bigbird_dna.motifs.modisco`),
their TOMTOM matches among JASPAR motifs (:mod:`~bigbird_dna.motifs.tomtom`), and the report folder
(:mod:`~bigbird_dna.motifs.report`), written through a staging folder renamed into place."""

from __future__ import annotations

import importlib.util
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bigbird_dna.errors import require_extra
from bigbird_dna.motifs.attributions import Attributions
from bigbird_dna.motifs.jaspar import MOTIFS_EXTRA, Motif
from bigbird_dna.motifs.modisco import ModiscoSettings, find_patterns
from bigbird_dna.motifs.report import pattern_rows, write_report
from bigbird_dna.motifs.tomtom import match_motifs
from bigbird_dna.runtime.atomic import atomic_directory

# (module, what needs it): every optional package of the motifs extra, checked before any work
EXTRA_MODULES = (("pyjaspar", "reading JASPAR motifs"), ("modiscolite", "TF-MoDISco"), ("memelite", "TOMTOM"),
                 ("logomaker", "drawing sequence logos"))


def require_motif_extras() -> None:
    """Fail early, with one :class:`~bigbird_dna.errors.InputError` naming the install command, if a
    package of the ``motifs`` extra is missing (found without importing it: the imports take seconds)."""
    for module, purpose in EXTRA_MODULES:
        if importlib.util.find_spec(module) is None:
            require_extra(module, MOTIFS_EXTRA, purpose)


def learn_motifs(data: Attributions, source: str | os.PathLike, out: str | os.PathLike, targets: list[Motif],
                 jaspar: dict[str, Any], settings: ModiscoSettings = ModiscoSettings(),
                 top_matches: int = 3) -> dict[str, Any]:
    """Run the pipeline and write the report folder ``out``; return ``patterns.json``'s content.

    Args:
        data: the attribution file's contents (:func:`~bigbird_dna.motifs.attributions.read_attributions`).
        source: that file's path, for the report.
        targets: the JASPAR motifs to match against (a whole collection: TOMTOM's p-values take
            the targets as their background).
        jaspar: how ``targets`` were chosen (``release``, ``collection``, ``taxon``), for the report.
    """
    source = Path(source).expanduser()
    with atomic_directory(out) as staging:
        patterns = find_patterns(data.sequences, data.attributions, settings, save_to=staging / "modisco.h5")
        matches = match_motifs([p.ppm[p.core()] for p in patterns], targets, top_matches)
        summary = {
            "input": {"path": str(source.resolve()), "name": source.name, "method": data.method,
                      "target": data.target, "model": data.model, "sequences": int(data.sequences.shape[0]),
                      "length": int(data.sequences.shape[2])},
            "jaspar": dict(jaspar, motifs=len(targets)),
            "modisco": asdict(settings),
            "q_value": "Benjamini-Hochberg over each pattern's p-values against all targets; E = p x targets",
            "patterns": pattern_rows(staging, patterns, matches, {m.id: m for m in targets}),
        }
        write_report(staging, summary)
    return summary
