"""The task folder: ``{train,val,test}.tsv``, ``{train,val,test}.bed`` and ``manifest.json``.

- ``SPLIT.tsv``: header ``sequence label record start end strand kind``; ``label`` is 0/1,
  ``kind`` the positives' (``promoter``, ``donor``, ``acceptor``) or a negative kind
  (``background``, ``gene_body``, ``shuffled``, ``decoy``); readable as it is by
  :func:`bigbird_dna.data.promoter.files.read_table` (``data=promoter_labelled data.train=train.tsv``).
- ``SPLIT.bed``: BED6 of the same windows in the same order (record, start, end, name = kind,
  score = label, strand), 0-based, half-open.
- ``manifest.json``: the task's name, inputs (paths, names, sizes), settings, seed, split regions,
  counts per split and kind, and the task's report: sites (TSSs, splice sites) before and after
  deduplication, what was dropped or fell short and why, and for splice tasks the dinucleotides
  the positives carry.

The folder is written through a staging folder renamed into place (:func:`atomic_directory`), so
it appears complete or not at all.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bigbird_dna.data.annotation.samples import TaskData
from bigbird_dna.genome.splits import SPLITS
from bigbird_dna.runtime.atomic import atomic_directory

TSV_HEADER = ("sequence", "label", "record", "start", "end", "strand", "kind")


def file_info(path: str | os.PathLike) -> dict[str, Any]:
    """``{"path", "name", "bytes"}`` of an input file."""
    path = Path(path).expanduser()
    return {"path": str(path.resolve()), "name": path.name, "bytes": path.stat().st_size}


def build_manifest(task: str, data: TaskData, inputs: dict[str, Any], settings: dict[str, Any],
                   seed: int) -> dict[str, Any]:
    """The manifest of task ``task`` (see the module docstring) as a JSON-ready dict."""
    report = data.report
    return {
        "task": task,
        "coordinates": "0-based, half-open (BED); start/end on the forward strand, sequence read on strand",
        "inputs": inputs,
        "settings": settings,
        "seed": seed,
        "counts": report["counts"],
        "totals": {split: len(data.samples[split]) for split in SPLITS},
        **{key: value for key, value in report.items() if key != "counts"},
        "splits": {split: [{"record": r.record, "start": r.start, "end": r.end} for r in regions]
                   for split, regions in data.regions.items()},
    }


def write_split_files(folder: Path, data: TaskData) -> None:
    """``SPLIT.tsv`` and ``SPLIT.bed`` for every split into ``folder`` (plain writes: the caller stages)."""
    for split in SPLITS:
        with open(folder / f"{split}.tsv", "w") as tsv, open(folder / f"{split}.bed", "w") as bed:
            tsv.write("\t".join(TSV_HEADER) + "\n")
            for s in data.samples[split]:
                tsv.write(f"{s.sequence}\t{s.label}\t{s.record}\t{s.start}\t{s.end}\t{s.strand}\t{s.kind}\n")
                bed.write(f"{s.record}\t{s.start}\t{s.end}\t{s.kind}\t{s.label}\t{s.strand}\n")


def write_task(out: str | os.PathLike, data: TaskData, manifest: dict[str, Any]) -> Path:
    """Write the task folder at ``out`` atomically (an existing folder there is replaced whole)."""
    with atomic_directory(out) as staging:
        write_split_files(staging, data)
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return Path(out)
