"""A genome scan, as asked for: :class:`ScanRequest`, the typed form of ``predict``'s command line,
and the checks it passes before any model is loaded.

- Numbers must be positive, the threshold a probability, every FASTA a readable file, the output
  folder writable (a probe file is written and removed), and no FASTA may be given twice (by file
  identity, without reading it: rows are keyed by record name).
- Options that only some predictors use (:data:`PREDICTOR_OPTIONS`) are refused for a model whose
  predictor does not: a request remembers which ones were given (``given``).

Checks that need the FASTA's contents are made during the scan, in its one pass over the input
(:mod:`bigbird_dna.inference.windows`: a record name twice, a bad record;
:mod:`bigbird_dna.inference.batching`: a window that needs more tokens than the model has).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from bigbird_dna.errors import InputError
from bigbird_dna.genome.fasta_stream import check_sequence
from bigbird_dna.runtime.atomic import ensure_writable_dir
from bigbird_dna.version import __version__

STRAND_CHOICES = {"both": ("+", "-"), "+": ("+",), "-": ("-",)}
COMBINE_CHOICES = ("mean", "max", "per-strand")
FORMATS = ("tsv", "hdf5", "bedgraph", "bigwig")
# Options that only some predictors use, with what they do (for the error message).
PREDICTOR_OPTIONS = {"threshold": "the BED cut-off of promoter scores", "bed": "chromatin intervals to score",
                     "format": "the output file format", "merge": "joining overlapping promoter windows",
                     "label": "the chromatin label of a track"}


@dataclass(frozen=True)
class ScanRequest:
    """What to scan, with what, and where the outputs go. Coordinates are 0-based, half-open.

    Attributes:
        fastas: the FASTA files to scan (plain or gzip); with ``bed``, the one genome.
        out_prefix: outputs are ``<out_prefix>.tsv``, ``.bed``, ``.h5``...
        model: the export folder.
        window, stride: in bp; ``None``: the model's own window, and stride = window.
        strands: ``both``, ``+`` or ``-``.
        combine: with both strands, ``mean``, ``max`` (one row, strand ``.``) or ``per-strand``.
        threshold, merge: the BED of one-label models (score >= threshold; overlapping windows joined).
        bed: intervals to score, one centred window each (multi-label models).
        format: ``tsv``, ``hdf5``, ``bedgraph`` or ``bigwig``.
        label: the label (name or 0-based index) of a multi-label model's track.
        gzip: write the TSV gzip-compressed.
        batch_size: windows per forward pass.
        tokenizer_workers: ``"auto"`` or a number of tokenizer processes.
        device, precision, cuda_graphs: see :mod:`bigbird_dna.inference.device`.
        progress: a progress bar on a terminal, lines in a log.
        given: which of :data:`PREDICTOR_OPTIONS` were given explicitly.
    """

    fastas: tuple[Path, ...]
    out_prefix: Path
    model: Path
    window: int | None = None
    stride: int | None = None
    strands: str = "both"
    combine: str = "mean"
    threshold: float = 0.5
    merge: bool = False
    bed: Path | None = None
    format: str = "tsv"
    label: str | None = None
    gzip: bool = False
    batch_size: int = 16
    tokenizer_workers: int | str = "auto"
    device: str = "auto"
    precision: str = "auto"
    cuda_graphs: bool = True
    progress: bool = True
    given: frozenset[str] = field(default_factory=frozenset)

    @property
    def strand_list(self) -> tuple[str, ...]:
        """The strands scored, ``+`` before ``-``."""
        return STRAND_CHOICES[self.strands]

    def check(self) -> None:
        """Refuse bad settings and unreadable inputs before any model is loaded (:class:`InputError`)."""
        for name in ("window", "stride", "batch_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise InputError(f"--{name.replace('_', '-')} must be a positive integer, got {value}.")
        if not 0.0 <= self.threshold <= 1.0:
            raise InputError(f"--threshold must lie in [0, 1], got {self.threshold}.")
        if self.strands not in STRAND_CHOICES or self.combine not in COMBINE_CHOICES or self.format not in FORMATS:
            raise InputError(f"strands={self.strands!r}, combine={self.combine!r}, format={self.format!r}: use "
                             f"{sorted(STRAND_CHOICES)}, {COMBINE_CHOICES} and {FORMATS}.")
        if "combine" in self.given and self.strands != "both":
            raise InputError(f"--combine {self.combine} combines the two strands; it does not apply to "
                             f"--strands {self.strands}. Remove it or use --strands both.")
        for path in self.fastas:
            if path.is_dir():
                raise InputError(f"{path} is a directory, not a FASTA file; give the FASTA files inside it.")
            if not path.is_file():
                raise InputError(f"FASTA not found: {path}.")
            if not os.access(path, os.R_OK):
                raise InputError(f"FASTA not readable: {path}; check its permissions.")
        check_output_folder(self.out_prefix)

    def check_options(self, task: str, accepted: Sequence[str]) -> None:
        """Refuse a predictor option given for a ``task`` model whose predictor does not use it."""
        for name, meaning in PREDICTOR_OPTIONS.items():
            if name in self.given and name not in accepted:
                raise InputError(f"--{name} ({meaning}) does not apply to a '{task}' model; remove it.")

    def settings(self, task: str, window: int, stride: int | None, **extra) -> dict[str, str]:
        """The settings every output records (TSV ``#`` line, BED track line, HDF5 attributes)."""
        values = {"model": str(self.model), "task": task, "inputs": ",".join(map(str, self.fastas)),
                  "window_bp": window, "stride_bp": stride, "strands": self.strands, "combine": self.combine,
                  **extra, "bigbird_dna": __version__, "coordinates": "0-based,half-open"}
        return {key: str(value) for key, value in values.items() if value is not None}


def settings_comment(values: dict[str, str]) -> str:
    """One ``#`` line for a TSV: ``# bigbird_dna predict key=value ...``."""
    return "# bigbird_dna predict " + " ".join(f"{k}={v}" for k, v in values.items()) + "\n"


def track_description(values: dict[str, str]) -> str:
    """``bigbird_dna predict key=value ...`` with double quotes made single, for the quoted
    ``description`` of a BED or bedGraph track line."""
    return settings_comment(values)[2:].strip().replace('"', "'")


def check_output_folder(prefix: str | os.PathLike) -> None:
    """Create the folder of ``prefix`` if needed and prove it is writable, or raise :class:`InputError`."""
    folder = Path(prefix).expanduser().parent
    try:
        ensure_writable_dir(folder)
    except InputError as err:
        cause = err.__cause__
        raise InputError(f"cannot write to the output folder {folder}: {getattr(cause, 'strerror', None) or cause}. "
                         "Choose a writable one with --out-prefix DIR/NAME.") from cause


def check_distinct_files(fastas: Sequence[str | os.PathLike]) -> None:
    """Refuse a FASTA given twice (under any path): :class:`InputError` naming both paths."""
    for i, path in enumerate(fastas):
        for other in fastas[:i]:
            if os.path.samefile(path, other):
                raise InputError(f"{other} and {path} are the same file; give each FASTA once.")


def checked_sequences(seqs: Iterable[str] | str) -> list[str]:
    """``seqs`` as a list (a single string is one sequence), each refused with an :class:`InputError`
    naming its index when it is empty or holds a character other than A, C, G, T, N and the IUPAC
    codes (any case): the same rule as a FASTA read by ``predict``."""
    seqs = [seqs] if isinstance(seqs, str) else list(seqs)
    for index, seq in enumerate(seqs):
        if not isinstance(seq, str):
            raise InputError(f"sequence {index} is a {type(seq).__name__}, not a DNA string.")
        check_sequence(seq, f"sequence {index}")
    return seqs
