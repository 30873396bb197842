"""An annotation task built on the fly for training: ``data=promoter_annotation`` (promoters) and
``data=splice_annotation`` (``data.task=splice_donors`` or ``splice_acceptors``).

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

from bigbird_dna.data.annotation.build import annotation_task, build_task_from_files, task_settings
from bigbird_dna.data.annotation.output import write_task
from bigbird_dna.data.annotation.samples import WindowSettings
from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequences
from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.genome.splits import SPLITS, write_split_manifest
from bigbird_dna.runtime.phases import phase

log = logging.getLogger(__name__)


def task_name(data: dict[str, Any]) -> str:
    """The task a data config builds: ``data.task``, else ``promoters`` (``promoter_annotation.yaml`` has no key)."""
    return data.get("task") or "promoters"


def settings_from_config(data: dict[str, Any]) -> WindowSettings:
    """The settings of the task of ``data`` (:func:`task_name`) from the keys of its config
    (``conf/data/promoter_annotation.yaml``, ``conf/data/splice_annotation.yaml``) that name its fields."""
    name = task_name(data)
    task = annotation_task(name)
    values = {key: data[key] for key in task.setting_names() if key in data}
    if "negatives" in values:
        negatives = dict(values["negatives"] or {})
        kinds = task.settings_class.NEGATIVE_KINDS
        unknown = set(negatives) - set(kinds)
        if unknown:
            raise InputError(f"data.negatives has unknown kind(s) {sorted(unknown)}; use {', '.join(kinds)}.")
        values["negatives"] = {kind: float(negatives.get(kind, 0)) for kind in kinds}
    for key in ("val_records", "test_records"):
        if key in values:
            values[key] = tuple(values[key] or ())
    return task_settings(name, values)


class AnnotatedTaskData(LabelledDataModule):
    """Windows around the sites (TSSs, splice donors or acceptors) of a GFF3/GTF annotation, against
    named negatives; binary labels.

    Args:
        seed: run seed (batch order; the negatives too unless ``data.sample_seed`` is set).
        run_dir: where ``annotation/`` and ``split_manifest.json`` go.
        is_main_process: only the main process writes files.
        **data: the settings of ``conf/data/promoter_annotation.yaml`` or ``splice_annotation.yaml``;
            ``task`` names the task (``promoters`` when unset).
    """

    def __init__(self, seed: int, run_dir: str | Path, is_main_process: bool = True, **data: Any):
        unset = [key for key in ("fasta", "gff") if not data.get(key)]
        if unset:
            raise InputError(f"data.{' and data.'.join(unset)} not set: an annotation task needs "
                             "data.fasta=GENOME.fa and data.gff=ANNOTATION.gff3 (or .gtf).")
        name = task_name(data)
        settings = settings_from_config(data)
        # The negatives' seed: the run seed, or data.sample_seed to keep one split across model seeds.
        sample_seed = seed if data.get("sample_seed") is None else int(data["sample_seed"])
        self.genome = open_genome(data["fasta"], data.get("cache_dir"))
        with phase("annotation") as timing:  # minutes on a large genome: a phase of the run's summary
            task, manifest = build_task_from_files(self.genome, data["gff"], name, settings, sample_seed,
                                                   lambda message: log.info(message))
            timing.detail = f"{name} windows from {Path(data['gff']).name}: {manifest['counts']}"
        datasets = {split: LabelledSequences([s.sequence for s in task.samples[split]],
                                             [float(s.label) for s in task.samples[split]]) for split in SPLITS}
        super().__init__(datasets, data["batch_size"], data["num_workers"], seed, label_kind="binary",
                         baselines=data.get("baselines"),
                         reverse_complement_prob=float(data.get("reverse_complement_prob", 0.0)))
        self.splits = task.regions
        self.counts = manifest["counts"]
        log.info("annotated %s windows per split and kind: %s", name, self.counts)
        if is_main_process:
            run_dir = Path(run_dir)
            write_task(run_dir / "annotation", task, manifest)
            write_split_manifest(run_dir / "split_manifest.json", task.regions, str(data["fasta"]), {
                "task": name, "gff": str(data["gff"]), "upstream_bp": settings.upstream_bp,
                "downstream_bp": settings.downstream_bp, "seed": seed, "sample_seed": sample_seed,
                "samples": self.counts,
                "negatives": dict(settings.negatives), "task_folder": str(run_dir / "annotation")})

    def training_sequences(self) -> Iterable[str]:
        """Random genome chunks of the train split, for training a tokenizer from scratch."""
        regions = list(self.splits["train"])
        return sample_training_chunks(self.genome, regions, total_bp=10 ** 12, seed=self.seed,
                                      min_chunk_bp=min(1000, min(e - s for _, s, e in regions)))
