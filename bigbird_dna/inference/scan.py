"""Scoring windows with a classifier: batched, both strands, on any device.

This is the output-independent half of a genome scan; :mod:`bigbird_dna.inference.predictors`
turns the scores into output files, and :class:`~bigbird_dna.pretrained.BigBirdDNA` into tensors.

**Windows** are cut by :mod:`bigbird_dna.inference.windows` (0-based, half-open, ``+`` then ``-``),
streamed in chunks so that memory does not grow with the record's length.

**Strands.** With both strands and ``--combine mean`` (or ``max``) the two scores of a window become
one row, their mean (or maximum), with strand ``.`` (:func:`combine_strands`); with
``--combine per-strand`` or one strand each strand is its own row.

**One pass.** Windows are tokenized in a background thread (and, for BPE or k-mer tokenizers on
a GPU, on worker processes: :mod:`bigbird_dna.inference.batching`) while the model scores the
previous batch, and scores come back in window order. On a GPU, batches are pinned, copied without
blocking and replayed from a CUDA graph (:mod:`bigbird_dna.inference.cuda_graphs`). The
tokenization that feeds the model is also the
check that a window fits the model's context: the first window that needs more tokens stops the
scan with an :class:`InputError` naming it (windows are never truncated).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Sequence

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.inference.batching import auto_workers, window_batches
from bigbird_dna.inference.cuda_graphs import GraphedForward
from bigbird_dna.inference.device import autocast, resolve_device, resolve_precision
from bigbird_dna.inference.request import COMBINE_CHOICES, ScanRequest
from bigbird_dna.inference.windows import ScanWindow, model_window
from bigbird_dna.model.export import Export
from bigbird_dna.model.networks import SequenceClassifier, network_from_export
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.specials import padding_mask_or_none


def score_windows(model: Callable[[torch.Tensor, torch.Tensor | None], torch.Tensor], tokenizer: DNATokenizer,
                  windows: Iterable[ScanWindow], batch_size: int, max_tokens: int, device: torch.device,
                  precision: str = "fp32", workers: int = 0) -> Iterator[tuple[ScanWindow, torch.Tensor]]:
    """Score windows in batches; yields ``(window, scores [num_outputs])`` in input order.

    Args:
        model: ``(input_ids [B, T], attention_mask [B, T] or None) -> [B, num_outputs]``, e.g.
            ``SequenceClassifier.predict_proba``; called under ``torch.inference_mode``.
        tokenizer: the model's tokenizer (``[CLS] seq [SEP]``, as in training).
        windows: e.g. :func:`iter_windows`.
        batch_size: windows per forward pass.
        max_tokens: the model's context; a window that needs more is an :class:`InputError`.
        device: where the model lives.
        precision: ``"bf16"`` (autocast, CUDA) or ``"fp32"``.
        workers: tokenizer processes (:func:`~bigbird_dna.inference.batching.window_batches`).

    On a GPU the batches are pinned and copied without blocking, and the scores of a batch are
    read back only after the next batch is queued, so the host prepares and the GPU computes at once.
    """
    gpu = device.type == "cuda"
    batches = window_batches(iter(windows), tokenizer, batch_size, max_tokens, workers, pin_memory=gpu)
    queued: tuple[list[ScanWindow], torch.Tensor, torch.cuda.Event | None] | None = None
    for batch, ids, mask in batches:
        mask = padding_mask_or_none(mask)  # on the host: full windows skip the key-padding path
        with torch.inference_mode(), autocast(device, precision):
            scores = model(ids.to(device, non_blocking=True),
                           None if mask is None else mask.to(device, non_blocking=True)).float()
        if gpu:  # start the copy back; wait for it only after queuing the next batch
            host = torch.empty(scores.shape, dtype=torch.float32, pin_memory=True)
            host.copy_(scores, non_blocking=True)
            done = torch.cuda.Event()
            done.record()
        else:
            host, done = scores.cpu(), None
        if queued is not None:
            yield from _collected(*queued)
        queued = (batch, host, done)
    if queued is not None:
        yield from _collected(*queued)


def _collected(batch: list[ScanWindow], scores: torch.Tensor, done) -> Iterator[tuple[ScanWindow, torch.Tensor]]:
    if done is not None:
        done.synchronize()
    yield from zip(batch, scores)


def combine_strands(scored: Iterable[tuple[ScanWindow, torch.Tensor]], strands: Sequence[str],
                    combine: str) -> Iterator[tuple[int, ScanWindow, str, torch.Tensor]]:
    """Output rows of scored windows: ``(location, window, strand, scores)``.

    Each scanned location yields ``len(strands)`` windows back to back (``+`` before ``-``), as
    :func:`iter_windows` cuts them; ``location`` counts the locations from 0. With ``combine`` =
    ``"mean"`` or ``"max"`` and both strands a location is one row, the mean or the elementwise
    maximum of its two scores (in their dtype), with strand ``.``; otherwise (``"per-strand"``, or
    one strand) every window is a row on its own strand.
    """
    if combine not in COMBINE_CHOICES:
        raise InputError(f"unknown strand combination {combine!r}; use one of {COMBINE_CHOICES}.")
    average = combine != "per-strand" and len(strands) == 2
    pending = None
    for k, (window, scores) in enumerate(scored):
        if not average:
            yield k // len(strands), window, window.strand, scores
        elif window.strand == "+":
            pending = scores
        else:
            yield k // 2, window, ".", (pending + scores) / 2 if combine == "mean" else torch.maximum(pending, scores)


@dataclass
class Scanner:
    """A classifier export ready to score windows: its network on the device, the window, strands
    and strand combination, precision, CUDA graphs and tokenizer processes of one scan."""

    export: Export
    model: SequenceClassifier
    window: int
    strands: tuple[str, ...]
    combine: str
    device: torch.device
    precision: str
    cuda_graphs: bool = True
    workers: int = 0

    @classmethod
    def from_request(cls, export: Export, request: ScanRequest) -> "Scanner":
        """Window (the request's, or the model's own: :func:`~bigbird_dna.inference.windows.model_window`),
        strands, device, precision, CUDA graphs, tokenizer processes, and the export's classifier on
        that device."""
        if export.output is None or not export.output.kind.classifies:
            raise InputError(f"{export.path} holds a '{export.task}' model without a classification head; "
                             "export a fine-tuned classifier (task=promoter, ...).")
        window = request.window or model_window(export)
        device = resolve_device(request.device)
        model = network_from_export(export).to(device)
        workers = request.tokenizer_workers
        workers = auto_workers(export.tokenizer, device) if workers == "auto" else int(workers)
        return cls(export, model, window, request.strand_list, request.combine, device,
                   resolve_precision(request.precision, device), request.cuda_graphs, workers)

    def __post_init__(self) -> None:
        # On a GPU, batches of the scan's one shape replay a CUDA graph (inference/cuda_graphs.py).
        self.forward = GraphedForward(self.model.predict_proba) if self.cuda_graphs else self.model.predict_proba

    def rows(self, windows: Iterable[ScanWindow], batch_size: int,
             dtype: torch.dtype = torch.float32) -> Iterator[tuple[int, ScanWindow, str, torch.Tensor]]:
        """Score ``windows`` and combine their strands: :func:`combine_strands` rows, with scores
        of ``dtype``."""
        return combine_strands(((w, scores.to(dtype)) for w, scores in self.scored(windows, batch_size)),
                               self.strands, self.combine)

    def scored(self, windows: Iterable[ScanWindow], batch_size: int) -> Iterator[tuple[ScanWindow, torch.Tensor]]:
        """``(window, scores)`` of every window, in order (:func:`score_windows`)."""
        return score_windows(self.forward, self.export.tokenizer, windows, batch_size,
                             self.model.config.max_input_tokens, self.device, self.precision, self.workers)


class ScanProgress:
    """Bases scanned: a tqdm bar on a terminal, else one plain line per record (log-file friendly)."""

    def __init__(self, enabled: bool = True):
        self.interactive = enabled and sys.stderr.isatty()
        self.enabled = enabled
        self._bar = None
        self._record: tuple[str, int] | None = None
        self._started = time.monotonic()
        self.bases = 0
        if self.interactive:
            from tqdm import tqdm
            self._bar = tqdm(unit="bp", unit_scale=True, desc="scanning", dynamic_ncols=True)

    def advance(self, window: ScanWindow) -> None:
        """Count a window's new bases (once per location, whatever the number of strands)."""
        record, reached = self._record if self._record and self._record[0] == window.record else (None, 0)
        if record is None and self._record is not None:
            self._line(self._record[0])
        new = max(0, window.end - max(reached, window.start))
        self._record = (window.record, max(reached, window.end))
        self.bases += new
        if self._bar is not None:
            self._bar.update(new)

    def _line(self, record: str) -> None:
        if self.enabled and not self.interactive:
            rate = self.bases / max(time.monotonic() - self._started, 1e-9)
            print(f"scanned {record}: {self.bases:,} bp so far, {rate / 1e3:,.1f} kbp/s", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self._record is not None:
            self._line(self._record[0])
        if self._bar is not None:
            self._bar.close()
