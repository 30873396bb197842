"""The planted-motif task folder: ``{train,val,test}.tsv``, ``sites.bed`` and ``manifest.json``.

- ``SPLIT.tsv``: header ``sequence label name kind record start end``; ``label`` is 0/1, ``kind``
  one of ``positive``, ``background``, ``far``, ``swapped``; ``record:[start, end)`` is the genome
  window the sequence was read from (forward strand). The labelled-data readers take it as it is::

      python -m bigbird_dna.train task=promoter data=promoter_labelled \\
          data.train=DIR/train.tsv data.val=DIR/val.tsv data.test=DIR/test.tsv

- ``sites.bed``: BED6, one line per planted instance, in the sequence's own coordinates: record =
  the sequence's name (``train_000017``), ``[start, end)``, name = the JASPAR matrix ID, score 0,
  strand = the strand the instance reads on. Sorted by split (train, val, test), sequence, start.
- ``manifest.json``: the rule, settings and seed; the motifs (ID, name, consensus, length, JASPAR
  release); how negatives were built; counts per split, label and kind; the source FASTA and every
  sequence's window ``[record, start, end]``.

The folder is staged next to its final path and renamed into place
(:func:`~bigbird_dna.runtime.atomic.atomic_directory`): it appears complete or not at all.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from bigbird_dna.motifs.jaspar import Motif
from bigbird_dna.motifs.planted import SPLITS, PlantedSequence, PlantedSettings, settings_dict
from bigbird_dna.runtime.atomic import atomic_directory

TSV_HEADER = ("sequence", "label", "name", "kind", "record", "start", "end")
NEGATIVES = {
    "presence": "unplanted windows of the same genome, same length distribution (kind background)",
    "one_of": "unplanted windows of the same genome, same length distribution (kind background)",
    "spacing": "the same two motifs, sampled the same way, with B's start {far[0]}-{far[1]} bp after A's end (kind "
               "far) or in the other order, A's start {near[0]}-{near[1]} bp after B's end (kind swapped); kinds "
               "in turn from {kinds}",
}


def build_manifest(task: dict[str, list[PlantedSequence]], motifs: list[Motif], settings: PlantedSettings,
                   release: str, fasta: str | os.PathLike) -> dict[str, Any]:
    """The manifest (see the module docstring) as a JSON-ready dict."""
    fasta = Path(fasta).expanduser()
    roles = "AB" if settings.rule == "spacing" else [str(i) for i in range(len(motifs))]
    counts = {split: {"labels": {str(label): sum(s.label == label for s in items) for label in (1, 0)},
                      "kinds": dict(sorted(Counter(s.kind for s in items).items()))} for split, items in task.items()}
    return {
        "task": "planted_motifs",
        "rule": settings.rule,
        "coordinates": "0-based, half-open; sites in the sequence's coordinates, windows in the record's (+ strand)",
        "settings": settings_dict(settings),
        "seed": settings.seed,
        "jaspar_release": release,
        "motifs": [{"role": role, "id": m.id, "name": m.name, "consensus": m.consensus, "length": m.length}
                   for role, m in zip(roles, motifs)],
        "negatives": NEGATIVES[settings.rule].format(far=settings.far_spacing, near=settings.spacing,
                                                     kinds=list(settings.negatives)),
        "counts": counts,
        "totals": {split: len(items) for split, items in task.items()},
        "source": {"path": str(fasta.resolve()), "name": fasta.name, "bytes": fasta.stat().st_size},
        "windows": {s.name: [s.record, s.start, s.end] for split in SPLITS for s in task[split]},
    }


def write_task_folder(out: str | os.PathLike, task: dict[str, list[PlantedSequence]],
                      manifest: dict[str, Any]) -> Path:
    """Write the folder at ``out`` atomically (after
    :func:`~bigbird_dna.runtime.atomic.check_new_output_dir` accepted it)."""
    with atomic_directory(out) as staging:
        with open(staging / "sites.bed", "w") as bed:
            for split in SPLITS:
                with open(staging / f"{split}.tsv", "w") as tsv:
                    tsv.write("\t".join(TSV_HEADER) + "\n")
                    for s in task[split]:
                        tsv.write(f"{s.sequence}\t{s.label}\t{s.name}\t{s.kind}\t{s.record}\t{s.start}\t{s.end}\n")
                        bed.writelines(f"{s.name}\t{site.start}\t{site.end}\t{site.motif_id}\t0\t{site.strand}\n"
                                       for site in s.sites)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return Path(out)
