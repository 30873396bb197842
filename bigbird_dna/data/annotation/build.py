"""From files to a built task: prepare the genome, read the annotation, build, and describe it.

Shared by the CLI (:mod:`bigbird_dna.data.annotation.__main__`) and the training DataModule
(:mod:`bigbird_dna.data.annotation.datamodule`), so both produce the very same windows from the
same files, settings and seed.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any, Callable

from bigbird_dna.data.annotation.gff import read_annotation
from bigbird_dna.data.annotation.output import build_manifest, file_info
from bigbird_dna.data.annotation.promoters import PromoterSettings, PromoterTaskData, build_promoter_task
from bigbird_dna.genome.fasta import Genome, prepare_genome


def build_promoter_task_from_files(fasta: str | os.PathLike, gff: str | os.PathLike, settings: PromoterSettings,
                                   seed: int, cache_dir: str | os.PathLike | None = None,
                                   progress: Callable[[str], None] = lambda message: None,
                                   ) -> tuple[PromoterTaskData, dict[str, Any], Path]:
    """Build the promoter task of ``fasta`` + ``gff`` (see :mod:`~bigbird_dna.data.annotation.promoters`).

    Returns:
        ``(task, manifest, prepared_fasta)``: the samples, the manifest dict, and the path
        :func:`prepare_genome` gave (an indexed copy for a plain-gzip FASTA).

    Raises:
        InputError: any problem with the files or settings.
    """
    settings.check()
    progress(f"indexing genome {fasta}")
    prepared = prepare_genome(fasta, cache_dir)
    with Genome(prepared) as genome:
        progress(f"reading annotation {gff}")
        annotation = read_annotation(gff, genome.record_lengths)
        progress(f"{annotation.format.upper()}: {annotation.counts['genes']} genes, "
                 f"{annotation.counts['transcripts']} transcripts")
        task = build_promoter_task(genome, annotation, settings, seed, progress)
    inputs = {"genome": file_info(fasta), "annotation": {**file_info(gff), "format": annotation.format,
                                                         "features": annotation.counts}}
    settings_dict = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(settings).items()}
    return task, build_manifest(task, inputs, settings_dict, seed), prepared
