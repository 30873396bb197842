"""From files to a built task: read the annotation against the genome, build, and describe it.

Shared by the CLI (:mod:`bigbird_dna.data.annotation.__main__`) and the training DataModule
(:mod:`bigbird_dna.data.annotation.datamodule`), so both produce the very same windows from the
same files, settings and seed.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from bigbird_dna.data.annotation.gff import read_annotation
from bigbird_dna.data.annotation.output import build_manifest, file_info
from bigbird_dna.data.annotation.promoters import PromoterSettings, PromoterTaskData, build_promoter_task
from bigbird_dna.genome.reader import GenomeReader


def build_promoter_task_from_files(genome: GenomeReader, gff: str | os.PathLike, settings: PromoterSettings,
                                   seed: int, progress: Callable[[str], None] = lambda message: None,
                                   ) -> tuple[PromoterTaskData, dict[str, Any]]:
    """Build the promoter task of ``genome`` + ``gff`` (see :mod:`~bigbird_dna.data.annotation.promoters`).

    Returns:
        ``(task, manifest)``: the samples and the manifest dict.

    Raises:
        InputError: any problem with the files or settings.
    """
    settings.check()
    progress(f"indexing genome {genome.path}")
    lengths = genome.record_lengths
    progress(f"reading annotation {gff}")
    annotation = read_annotation(gff, lengths)
    progress(f"{annotation.format.upper()}: {annotation.counts['genes']} genes, "
             f"{annotation.counts['transcripts']} transcripts")
    task = build_promoter_task(genome, annotation, settings, seed, progress)
    inputs = {"genome": file_info(genome.path), "annotation": {**file_info(gff), "format": annotation.format,
                                                         "features": annotation.counts}}
    settings_dict = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(settings).items()}
    return task, build_manifest(task, inputs, settings_dict, seed)
