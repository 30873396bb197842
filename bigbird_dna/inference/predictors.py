"""Genome scans into files: one scan loop (:func:`predict`), and one predictor per kind of output.

A predictor is chosen by the export's output (:mod:`bigbird_dna.model.outputs`), never by its
task's name, from :data:`PREDICTORS`:

- ``sigmoid`` with one output (a promoter model), :class:`ScorePredictor`: ``PREFIX.tsv`` with
  ``record start end strand score n_fraction``; ``PREFIX.bed`` (BED6) with a ``track`` line and the
  windows scoring at or above ``--threshold`` (``--merge`` joins overlapping ones); with ``--format
  bedgraph|bigwig`` also the scores as a track.
- ``sigmoid`` with several outputs (chromatin profiles), :class:`ProfilePredictor`: ``PREFIX.tsv``
  with ``record start end strand n_fraction <label names...>`` (5 decimals) or ``PREFIX.h5``
  (``--format hdf5``); ``--bed`` scores one window centred on each interval and reports the
  interval; ``--format bedgraph|bigwig --label NAME|INDEX`` adds one label's track.
- ``softmax`` (``classify``), :class:`ClassPredictor`: ``PREFIX.tsv`` with ``record start end strand
  n_fraction <class columns...> predicted``, a column per class (named by the class, prefixed ``p_``
  when a name clashes with another column), ``predicted`` the class of the highest probability.

Every output starts with the settings it was made with (a ``#`` line in a TSV, a ``track`` line in a
BED, attributes in HDF5), uses 0-based, half-open coordinates, and is written under a temporary name
and renamed when the scan ends: a failed scan leaves no file. A new output kind adds its predictor
here.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path
from typing import Callable, Iterator

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.inference.request import ScanRequest, check_distinct_files, track_description
from bigbird_dna.inference.scan import Scanner, ScanProgress, combine_strands
from bigbird_dna.inference.tracks import TRACK_SUFFIX, TrackWriter, check_track_args
from bigbird_dna.inference.windows import interval_windows, iter_windows
from bigbird_dna.inference.writers import (
    ROW_FIELDS,
    BedHitsWriter,
    ProfileHDF5Writer,
    Row,
    RowWriter,
    TableWriter,
    tsv_path,
)
from bigbird_dna.model.export import Export
from bigbird_dna.model.outputs import SIGMOID, SOFTMAX, ModelOutput
from bigbird_dna.runtime.atomic import atomic_paths


class Predictor:
    """How one kind of output is scanned and written. Subclasses set :attr:`options` (the
    predictor options of :data:`~bigbird_dna.inference.request.PREDICTOR_OPTIONS` they use) and
    implement :meth:`paths`, :meth:`writers` and :meth:`summary`."""

    options: tuple[str, ...] = ()
    score_dtype = torch.float32
    decimals = 6

    def check(self, request: ScanRequest, task: str) -> None:
        """Refuse settings this predictor cannot honour, before the model loads."""
        if request.format not in ("tsv", *TRACK_SUFFIX):
            raise InputError(f"--format {request.format} does not apply to a {task} model; use tsv (the default), "
                             "bedgraph or bigwig.")

    def settings(self, request: ScanRequest, output: ModelOutput) -> dict:
        """Predictor-specific settings recorded in the outputs."""
        return {}

    def paths(self, request: ScanRequest) -> list[Path]:
        raise NotImplementedError

    def writers(self, temporary: list[Path], final: list[Path], request: ScanRequest, output: ModelOutput,
                settings: dict[str, str], window: int, stride: int | None) -> Iterator[RowWriter]:
        """The writers of :meth:`paths`' files, one at a time (each is opened as it comes)."""
        raise NotImplementedError

    def summary(self, writers: list[RowWriter], request: ScanRequest, output: ModelOutput, bases: int,
                seconds: float, device: torch.device) -> str:
        raise NotImplementedError

    def _track(self, temporary: Path, final: Path, request: ScanRequest, settings: dict[str, str], window: int,
               stride: int, column: int) -> TrackWriter:
        return TrackWriter(temporary, request.format, window, stride, column, self.decimals,
                           track_description(settings), name=final.name)


class ScorePredictor(Predictor):
    """One sigmoid output (a promoter model): the TSV, the BED of high scores, an optional track."""

    options = ("threshold", "format", "merge")
    score_dtype = torch.float64  # the mean of two float32 probabilities is exact, as this TSV has always written it

    def check(self, request: ScanRequest, task: str) -> None:
        super().check(request, task)
        check_track_args(request.format, request.combine, request.strand_list)

    def settings(self, request: ScanRequest, output: ModelOutput) -> dict:
        return {"threshold": request.threshold, "merge": request.merge or None}

    def paths(self, request: ScanRequest) -> list[Path]:
        track = [Path(f"{request.out_prefix}{TRACK_SUFFIX[request.format]}")] if request.format in TRACK_SUFFIX else []
        return [tsv_path(request.out_prefix, request.gzip), Path(f"{request.out_prefix}.bed"), *track]

    def writers(self, temporary, final, request, output, settings, window, stride):
        def line(row: Row) -> str:
            return (f"{row.record}\t{row.start}\t{row.end}\t{row.strand}\t{float(row.scores[0]):.6f}\t"
                    f"{row.n_fraction:.4f}")

        bed_track = (f'track name="{request.out_prefix.name}" description="{track_description(settings)}" '
                     "useScore=1\n")
        yield TableWriter(temporary[0], request.gzip, settings,
                          ["record", "start", "end", "strand", "score", "n_fraction"], line)
        yield BedHitsWriter(temporary[1], request.threshold, request.merge, output.names[0], bed_track)
        if request.format in TRACK_SUFFIX:
            yield self._track(temporary[2], final[2], request, settings, window, stride, column=0)

    def summary(self, writers, request, output, bases, seconds, device):
        rate = bases / max(seconds, 1e-9) / 1e6
        return (f"scored {writers[0].count:,} windows ({bases:,} bp, {rate:.3f} Mbp/s on {device}); "
                f"{writers[1].count:,} BED rows at or above {request.threshold}")


class ProfilePredictor(Predictor):
    """Several sigmoid outputs (chromatin profiles): a TSV or HDF5 of profiles, from sliding
    windows or BED intervals, and optionally one label's track."""

    options = ("bed", "format", "label")
    decimals = 5

    def check(self, request: ScanRequest, task: str) -> None:
        fmt = request.format
        if fmt in TRACK_SUFFIX and (request.bed or request.label is None):
            raise InputError(f"--format {fmt} of a chromatin model is the track of one label over sliding windows: "
                             "give --label NAME|INDEX, without --bed.")
        if request.label is not None and fmt not in TRACK_SUFFIX:
            raise InputError("--label picks the label of a track; add --format bedgraph or bigwig.")
        check_track_args(fmt, request.combine, request.strand_list)
        if request.gzip and fmt == "hdf5":
            raise InputError("--gzip compresses the TSV; --format hdf5 is compressed already. Remove --gzip.")
        if request.bed and len(request.fastas) != 1:
            raise InputError(f"--bed scores intervals on one genome: give exactly one FASTA, not "
                             f"{len(request.fastas)}.")
        if request.bed and request.stride is not None:
            raise InputError("--stride does not apply with --bed: each interval gets one window centred on it. "
                             "Remove --stride (or --bed, to slide windows over the FASTA).")

    def settings(self, request: ScanRequest, output: ModelOutput) -> dict:
        label = None if request.label is None else output.names[label_column(request.label, output.names)]
        return {"bed": request.bed, "format": request.format, "label": label}

    def paths(self, request: ScanRequest) -> list[Path]:
        prefix = request.out_prefix
        table = Path(f"{prefix}.h5") if request.format == "hdf5" else tsv_path(prefix, request.gzip)
        return [table, Path(f"{prefix}{TRACK_SUFFIX[request.format]}")] if request.label is not None else [table]

    def writers(self, temporary, final, request, output, settings, window, stride):
        def line(row: Row) -> str:
            scores = "\t".join(f"{p:.5f}" for p in row.scores.tolist())
            return f"{row.record}\t{row.start}\t{row.end}\t{row.strand}\t{row.n_fraction:.4f}\t{scores}"

        names = list(output.names)
        if request.format == "hdf5":
            yield ProfileHDF5Writer(temporary[0], names, settings)
        else:
            yield TableWriter(temporary[0], request.gzip, settings, [*ROW_FIELDS, *names], line)
        if request.label is not None:
            column = label_column(request.label, output.names)
            yield self._track(temporary[1], final[1], request, settings, window, stride, column)

    def summary(self, writers, request, output, bases, seconds, device):
        return f"wrote {writers[0].count:,} profiles of {output.num_outputs} labels ({seconds:.1f} s on {device})"


class ClassPredictor(Predictor):
    """A softmax over classes (``classify``): a TSV of class probabilities and the predicted class."""

    def check(self, request: ScanRequest, task: str) -> None:
        """Nothing to check: it takes no predictor option (:meth:`ScanRequest.check_options`)."""

    def paths(self, request: ScanRequest) -> list[Path]:
        return [tsv_path(request.out_prefix, request.gzip)]

    def settings(self, request: ScanRequest, output: ModelOutput) -> dict:
        return {"classes": ",".join(output.names)}

    def writers(self, temporary, final, request, output, settings, window, stride):
        names = list(output.names)

        def line(row: Row) -> str:
            scores = "\t".join(f"{p:.6f}" for p in row.scores.tolist())
            return (f"{row.record}\t{row.start}\t{row.end}\t{row.strand}\t{row.n_fraction:.4f}\t{scores}\t"
                    f"{names[int(row.scores.argmax())]}")

        yield TableWriter(temporary[0], request.gzip, settings, [*ROW_FIELDS, *class_columns(names), "predicted"],
                          line)

    def summary(self, writers, request, output, bases, seconds, device):
        return (f"classified {writers[0].count:,} windows into {output.num_outputs} classes ({bases:,} bp, "
                f"{seconds:.1f} s on {device})")


def label_column(label: str, names: tuple[str, ...]) -> int:
    """The column of ``--label``: a label name, or a 0-based index."""
    if label in names:
        return names.index(label)
    if label.isdigit() and int(label) < len(names):
        return int(label)
    raise InputError(f"--label {label!r} is neither a label name nor an index below {len(names)}; "
                     f"labels: {', '.join(names[:5])}{', ...' if len(names) > 5 else ''}.")


def class_columns(names: list[str]) -> list[str]:
    """Probability column names: the class names, each prefixed ``p_`` if any would clash with a
    fixed column (or with each other once made tab/newline-free)."""
    columns = [name.replace("\t", " ").replace("\n", " ") for name in names]
    if set(columns) & {*ROW_FIELDS, "predicted"} or len(set(columns)) < len(columns):
        columns = [f"p_{name}" for name in columns]
    if len(set(columns)) < len(columns):
        columns = [f"p_{j}" for j in range(len(columns))]
    return columns


# Output kind -> the predictor of an output of that kind: one sigmoid label is a score per window,
# several are profiles.
PREDICTORS: dict[str, Callable[[ModelOutput], Predictor]] = {
    SIGMOID.name: lambda output: ScorePredictor() if output.num_outputs == 1 else ProfilePredictor(),
    SOFTMAX.name: lambda output: ClassPredictor(),
}


def predictor_for(export: Export) -> Predictor:
    """The predictor of an export's output, or an :class:`InputError` saying what to use instead."""
    output = export.output
    if output is None or output.kind.name not in PREDICTORS:
        head = "no head" if output is None else f"a {output.kind.name} head"
        hint = "; for per-base likelihoods of an MLM, use python -m bigbird_dna.score" if output is not None else ""
        raise InputError(f"{export.path} holds a '{export.task}' model ({head}), which predict cannot use: it needs "
                         "a fine-tuned classifier (python -m bigbird_dna.train task=promoter, classify or "
                         f"chromatin){hint}.")
    return PREDICTORS[output.kind.name](output)


def _interval_rows(scanner: Scanner, request: ScanRequest) -> Iterator[Row]:
    """One row per BED interval (per strand with ``--combine per-strand``), reporting the interval."""
    bins, plan, windows = interval_windows(request.bed, request.fastas[0], scanner.window, scanner.strands)
    scored = iter(scanner.scored(windows, request.batch_size))
    for (record, start, end), strands in zip(bins, plan):
        group = [(w, scores.float()) for w, scores in (next(scored) for _ in strands)]
        for _, w, strand, scores in combine_strands(group, strands, scanner.combine):
            yield Row(record, start, end, strand, w.n_fraction, scores, w)


def _window_rows(scanner: Scanner, request: ScanRequest, stride: int, dtype: torch.dtype) -> Iterator[Row]:
    """One row per window location (per strand with ``--combine per-strand``)."""
    check_distinct_files(request.fastas)
    windows = iter_windows(request.fastas, scanner.window, stride, scanner.strands)
    for _, w, strand, scores in scanner.rows(windows, request.batch_size, dtype=dtype):
        yield Row(w.record, w.start, w.end, strand, w.n_fraction, scores, w)


def predict(request: ScanRequest, export: Export) -> list[Path]:
    """Scan ``request.fastas`` (or ``request.bed`` on its genome) with ``export``; returns the
    written paths. Outputs appear only when the whole scan succeeded."""
    predictor = predictor_for(export)
    request.check_options(export.task, predictor.options)
    predictor.check(request, export.task)
    scanner = Scanner.from_request(export, request)
    output = export.output
    stride = None if request.bed else request.stride or scanner.window
    paths = predictor.paths(request)
    settings = request.settings(export.task, scanner.window, stride, **predictor.settings(request, output))
    rows = _interval_rows(scanner, request) if request.bed else \
        _window_rows(scanner, request, stride, predictor.score_dtype)
    started, progress = time.monotonic(), ScanProgress(enabled=request.progress and not request.bed)
    try:
        with atomic_paths(paths) as temporary, ExitStack() as stack:
            writers = [stack.enter_context(writer) for writer in
                       predictor.writers(temporary, paths, request, output, settings, scanner.window, stride)]
            for row in rows:
                progress.advance(row.window)
                for writer in writers:
                    writer.add(row)
    finally:
        progress.close()
    print(predictor.summary(writers, request, output, progress.bases, time.monotonic() - started, scanner.device),
          flush=True)
    return paths
