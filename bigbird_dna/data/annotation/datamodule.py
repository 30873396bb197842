"""The promoter task of an annotated genome, built on the fly for training (``data=promoter_annotation``).

``python -m bigbird_dna.train task=promoter data=promoter_annotation data.fasta=GENOME data.gff=GFF``
builds the same windows as ``python -m bigbird_dna.data.annotation GENOME GFF --task promoters``
(:mod:`~bigbird_dna.data.annotation.build`), in memory and deterministically from the run seed, so
every DDP rank gets the same data; only the main process writes the task folder
(``RUN_DIR/annotation/``: TSVs, BEDs, manifest) and ``RUN_DIR/split_manifest.json``.

With the default ``holdout_fraction`` and no record lists, the train split is exactly the train
region of an MLM pretrained with ``data.holdout_fraction`` set the same
(:mod:`~bigbird_dna.data.annotation.split`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterable

from bigbird_dna.data.annotation.build import build_promoter_task_from_files
from bigbird_dna.data.annotation.output import write_task
from bigbird_dna.data.annotation.promoters import NEGATIVE_KINDS, PromoterSettings
from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequences
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.genome.splits import SPLITS, write_split_manifest
from bigbird_dna.runtime.phases import phase

log = logging.getLogger(__name__)


def settings_from_config(data: dict[str, Any]) -> PromoterSettings:
    """:class:`PromoterSettings` from the ``conf/data/promoter_annotation.yaml`` keys."""
    negatives = dict(data.get("negatives") or {})
    unknown = set(negatives) - set(NEGATIVE_KINDS)
    if unknown:
        raise InputError(f"data.negatives has unknown kind(s) {sorted(unknown)}; use {', '.join(NEGATIVE_KINDS)}.")
    return PromoterSettings(
        upstream_bp=int(data["upstream_bp"]), downstream_bp=int(data["downstream_bp"]),
        negatives={kind: float(negatives.get(kind, 0)) for kind in NEGATIVE_KINDS},
        min_tss_distance_bp=int(data["min_tss_distance_bp"]),
        gene_body_tss_distance_bp=int(data.get("gene_body_tss_distance_bp", 500)),
        max_n_fraction=float(data["max_n_fraction"]), holdout_fraction=float(data["holdout_fraction"]),
        val_records=tuple(data.get("val_records") or ()), test_records=tuple(data.get("test_records") or ()))


class AnnotatedPromoterData(LabelledDataModule):
    """Promoter windows around the TSSs of a GFF3/GTF annotation, against named negatives.

    Args:
        seed: run seed (batch order; the negatives too unless ``data.sample_seed`` is set).
        run_dir: where ``annotation/`` and ``split_manifest.json`` go.
        is_main_process: only the main process writes files.
        **data: the settings of ``conf/data/promoter_annotation.yaml``.
    """

    def __init__(self, seed: int, run_dir: str | Path, is_main_process: bool = True, **data: Any):
        unset = [key for key in ("fasta", "gff") if not data.get(key)]
        if unset:
            raise InputError(f"data.{' and data.'.join(unset)} not set: data=promoter_annotation needs "
                             "data.fasta=GENOME.fa and data.gff=ANNOTATION.gff3 (or .gtf).")
        settings = settings_from_config(data)
        # The negatives' seed: the run seed, or data.sample_seed to keep one split across model seeds.
        sample_seed = seed if data.get("sample_seed") is None else int(data["sample_seed"])
        self.genome = open_genome(data["fasta"], data.get("cache_dir"))
        with phase("annotation") as timing:  # minutes on a large genome: a phase of the run's summary
            task, manifest = build_promoter_task_from_files(self.genome, data["gff"], settings, sample_seed,
                                                            lambda message: log.info(message))
            timing.detail = f"promoter windows from {Path(data['gff']).name}: {manifest['counts']}"
        datasets = {split: LabelledSequences([s.sequence for s in task.samples[split]],
                                             [float(s.label) for s in task.samples[split]]) for split in SPLITS}
        super().__init__(datasets, data["batch_size"], data["num_workers"], seed, label_kind="binary",
                         baselines=data.get("baselines"),
                         reverse_complement_prob=float(data.get("reverse_complement_prob", 0.0)))
        self.splits = task.regions
        self.counts = manifest["counts"]
        log.info("annotated promoter windows per split and kind: %s", self.counts)
        if is_main_process:
            run_dir = Path(run_dir)
            write_task(run_dir / "annotation", task, manifest)
            write_split_manifest(run_dir / "split_manifest.json", task.regions, str(data["fasta"]), {
                "gff": str(data["gff"]), "upstream_bp": settings.upstream_bp,
                "downstream_bp": settings.downstream_bp, "seed": seed, "sample_seed": sample_seed,
                "samples": self.counts,
                "negatives": dict(settings.negatives), "task_folder": str(run_dir / "annotation")})

    def training_sequences(self) -> Iterable[str]:
        """Random genome chunks of the train split, for training a tokenizer from scratch."""
        regions = list(self.splits["train"])
        return sample_training_chunks(self.genome, regions, total_bp=10 ** 12, seed=self.seed,
                                      min_chunk_bp=min(1000, min(e - s for _, s, e in regions)))
