"""Feeding a scan's model: windows into token batches, off the main thread, optionally on worker
processes, in pinned memory for a GPU.

A GPU scores BigBird windows faster than one CPU core tokenizes them with a BPE or k-mer
tokenizer (about 90 Mbp/min per core through HF ``tokenizers``), so :func:`window_batches` can
spread the tokenization over ``workers`` processes. Per-character tokenizers are a byte-table
lookup (over 1 Gbp/min on one core) and need none. Batches come back in window order either way.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from typing import Iterable, Iterator, TypeVar

import numpy as np
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials, per_character_ids

Batch = tuple[list[ScanWindow], torch.Tensor, torch.Tensor]  # windows, input_ids [B, T], attention_mask [B, T]
MAX_AUTO_WORKERS = 4
T = TypeVar("T")


def auto_workers(tokenizer: DNATokenizer, device: torch.device) -> int:
    """Tokenizer processes for a scan: none on CPU (the cores run the model) or for a
    per-character tokenizer; else up to 4, leaving two cores to the main process and its threads."""
    if device.type != "cuda" or per_character_ids(tokenizer) is not None:
        return 0
    return max(0, min(MAX_AUTO_WORKERS, (os.cpu_count() or 1) - 2))


def prefetch(items: Iterator, depth: int) -> Iterator:
    """Run ``items`` in a background thread, ``depth`` ahead; its exceptions re-raise here."""
    slots: queue.Queue = queue.Queue(maxsize=depth)
    done, stop = object(), threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if stop.is_set():
                    return
                slots.put(item)
            slots.put(done)
        except BaseException as err:  # handed to the consumer
            slots.put(err)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    try:
        while (item := slots.get()) is not done:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        _stop_producer(thread, slots, stop)


def _stop_producer(thread: threading.Thread, slots: queue.Queue, stop: threading.Event,
                   patience_s: float = 30.0) -> None:
    """Stop :func:`prefetch`'s thread when its consumer stops early (an error, a full disk): empty
    its queue so a blocked ``put`` returns, and wait for it to finish its item and see ``stop``.
    A daemon thread left inside a torch op while the interpreter exits can abort the process
    (``terminate called without an active exception``) after the error line was printed."""
    stop.set()
    waited = 0.0
    while thread.is_alive() and waited < patience_s:
        try:
            while True:
                slots.get_nowait()
        except queue.Empty:
            pass
        thread.join(timeout=0.05)
        waited += 0.05


def bases_that_fit(bases: int, tokens: int, max_tokens: int) -> int:
    """About how many bases fit the model's ``max_tokens`` (with [CLS] and [SEP]), at the bases per
    token of a sequence of ``bases`` that needed ``tokens`` (with [CLS] and [SEP])."""
    return max(1, bases * (max_tokens - 2) // max(tokens - 2, 1))


def long_window_message(record: str, start: int, end: int, strand: str, tokens: int, max_tokens: int) -> str:
    """The error of a window that needs more than the model's ``max_tokens`` (0-based, half-open)."""
    fit = bases_that_fit(end - start, tokens, max_tokens)
    return (f"window {record}:{start}-{end} ({strand} strand, {end - start} bp) needs {tokens} tokens with [CLS] "
            f"and [SEP], more than the model's {max_tokens}, which hold about {fit} bp of it; use --window {fit} "
            "or less (no output was written).")


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), in order."""
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


_worker_tokenizer: DNATokenizer | None = None


def _start_worker(tokenizer_json: str) -> None:
    global _worker_tokenizer
    torch.set_num_threads(1)
    _worker_tokenizer = DNATokenizer.from_str(tokenizer_json)


def _encode_in_worker(seqs: list[str], max_tokens: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
    ids, mask, truncated = encode_with_specials(_worker_tokenizer, seqs, max_tokens)
    return ids.numpy(), mask.numpy(), truncated


def _encoded(groups: Iterator[list[ScanWindow]], tokenizer: DNATokenizer, max_tokens: int,
             workers: int) -> Iterator[tuple[list[ScanWindow], torch.Tensor, torch.Tensor, list[int]]]:
    """``(windows, ids, mask, truncated)`` of each group, in order; ``workers`` processes or here."""
    if workers <= 0:
        for group in groups:
            yield group, *encode_with_specials(tokenizer, [w.seq for w in group], max_tokens)
        return
    # spawn: the parent may hold CUDA and threads, which a forked child must not inherit
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=_start_worker,
                             initargs=(tokenizer.to_str(),)) as pool:
        pending: deque[tuple[list[ScanWindow], Future]] = deque()
        for group in groups:
            pending.append((group, pool.submit(_encode_in_worker, [w.seq for w in group], max_tokens)))
            if len(pending) >= 2 * workers:
                group, future = pending.popleft()
                ids, mask, truncated = future.result()
                yield group, torch.from_numpy(ids), torch.from_numpy(mask), truncated
        while pending:
            group, future = pending.popleft()
            ids, mask, truncated = future.result()
            yield group, torch.from_numpy(ids), torch.from_numpy(mask), truncated


def window_batches(windows: Iterator[ScanWindow], tokenizer: DNATokenizer, batch_size: int, max_tokens: int,
                   workers: int = 0, pin_memory: bool = False, depth: int = 4) -> Iterator[Batch]:
    """``(windows, input_ids [B, T], attention_mask [B, T])`` of every ``batch_size`` windows, in
    order, prepared ``depth`` batches ahead on a background thread (and ``workers`` processes).

    ``[CLS] seq [SEP]``, right-padded; with ``pin_memory`` the tensors are page-locked, so their
    copies to a GPU can overlap its work. A window needing more than ``max_tokens`` tokens stops the
    scan with an :class:`InputError` naming it, before any window of its batch is scored.
    """
    def produce() -> Iterator[Batch]:
        for group, ids, mask, truncated in _encoded(chunked(windows, batch_size), tokenizer, max_tokens, workers):
            if truncated:
                w = group[truncated[0]]
                tokens = len(tokenizer.encode(w.seq)) + 2
                raise InputError(long_window_message(w.record, w.start, w.end, w.strand, tokens, max_tokens))
            if pin_memory:
                ids, mask = ids.pin_memory(), mask.pin_memory()
            yield group, ids, mask

    return prefetch(produce(), depth)

