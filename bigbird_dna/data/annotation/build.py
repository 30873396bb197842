"""From files to a built task: the tasks by name, their settings, and one build for the CLI and training.

:data:`TASKS` names every task the builder makes (``--task`` of the CLI, ``data.task`` of the
training config). The CLI (:mod:`bigbird_dna.data.annotation.__main__`) and the training DataModule
(:mod:`bigbird_dna.data.annotation.datamodule`) both build through :func:`build_task_from_files`,
so both produce the very same windows from the same files, settings and seed.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass
from typing import Any, Callable

from bigbird_dna.data.annotation.gff import Annotation, read_annotation
from bigbird_dna.data.annotation.output import build_manifest, file_info
from bigbird_dna.data.annotation.promoters import PromoterSettings, build_promoter_task
from bigbird_dna.data.annotation.samples import TaskData, WindowSettings
from bigbird_dna.data.annotation.splice import SpliceSettings, build_splice_task
from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader


@dataclass(frozen=True)
class AnnotationTask:
    """A task: its ``settings`` factory (a :class:`WindowSettings` subclass, some fields fixed) and its ``build``."""

    settings: Callable[..., WindowSettings]
    build: Callable[[GenomeReader, Annotation, Any, int, Callable[[str], None]], TaskData]

    @property
    def settings_class(self) -> type[WindowSettings]:
        return getattr(self.settings, "func", self.settings)

    def setting_names(self) -> set[str]:
        """The settings a user may give (fields the factory does not fix)."""
        fixed = getattr(self.settings, "keywords", {})
        return {f.name for f in dataclasses.fields(self.settings_class)} - set(fixed)


TASKS: dict[str, AnnotationTask] = {
    "promoters": AnnotationTask(PromoterSettings, build_promoter_task),
    "splice_donors": AnnotationTask(functools.partial(SpliceSettings, site="donor"), build_splice_task),
    "splice_acceptors": AnnotationTask(functools.partial(SpliceSettings, site="acceptor"), build_splice_task),
}


def annotation_task(name: str) -> AnnotationTask:
    """The task called ``name``.

    Raises:
        InputError: no such task.
    """
    if name not in TASKS:
        raise InputError(f"unknown task {name!r}; choose among {', '.join(TASKS)}.")
    return TASKS[name]


def task_settings(name: str, values: dict[str, Any]) -> WindowSettings:
    """The settings of task ``name``: its defaults, overridden by ``values`` (field name -> value).

    Raises:
        InputError: an unknown task, or a setting that task does not take.
    """
    task = annotation_task(name)
    foreign = sorted(set(values) - task.setting_names())
    if foreign:
        raise InputError(f"{', '.join(foreign)} do(es) not apply to task {name!r}, whose settings are "
                         f"{', '.join(sorted(task.setting_names()))}.")
    return task.settings(**values)


def build_task_from_files(genome: GenomeReader, gff: str | os.PathLike, name: str, settings: WindowSettings,
                          seed: int, progress: Callable[[str], None] = lambda message: None,
                          ) -> tuple[TaskData, dict[str, Any]]:
    """Build task ``name`` of ``genome`` + ``gff`` (see :mod:`~bigbird_dna.data.annotation.promoters`
    and :mod:`~bigbird_dna.data.annotation.splice`).

    Returns:
        ``(task, manifest)``: the samples and the manifest dict.

    Raises:
        InputError: any problem with the files or settings.
    """
    task = annotation_task(name)
    settings.check()
    progress(f"indexing genome {genome.path}")
    lengths = genome.record_lengths
    progress(f"reading annotation {gff}")
    annotation = read_annotation(gff, lengths)
    progress(f"{annotation.format.upper()}: {annotation.counts['genes']} genes, "
             f"{annotation.counts['transcripts']} transcripts")
    data = task.build(genome, annotation, settings, seed, progress)
    inputs = {"genome": file_info(genome.path), "annotation": {**file_info(gff), "format": annotation.format,
                                                         "features": annotation.counts}}
    settings_dict = {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(settings).items()}
    return data, build_manifest(name, data, inputs, settings_dict, seed)
