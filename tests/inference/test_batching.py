"""Tokenizing a scan's windows on worker processes gives the batches of the in-process path, in
order, with the same long-window error; ``auto`` picks workers only where they pay."""
from __future__ import annotations

import random
import threading

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.inference import batching
from bigbird_dna.inference.batching import auto_workers, prefetch, window_batches
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.tokenizer import char_tokenizer
from tests.promoter.conftest import tiny_tokenizer  # noqa: F401


def random_windows(count: int, seed: int = 0) -> list[ScanWindow]:
    rng = random.Random(seed)
    windows = []
    for i in range(count):
        length = rng.choice([60, 60, 60, 17])  # mostly full windows, some short record ends
        windows.append(ScanWindow(f"r{i % 3}", i * 60, i * 60 + length, "+-"[i % 2],
                                  "".join(rng.choice("ACGTN") for _ in range(length)), 0.0))
    return windows


def test_worker_processes_give_the_in_process_batches_in_order(tiny_tokenizer):  # noqa: F811
    windows = random_windows(45)
    here = list(window_batches(iter(windows), tiny_tokenizer, 8, 64, workers=0))
    spread = list(window_batches(iter(windows), tiny_tokenizer, 8, 64, workers=2))
    assert len(here) == len(spread) == 6
    for (w1, ids1, mask1), (w2, ids2, mask2) in zip(here, spread):
        assert w1 == w2
        assert torch.equal(ids1, ids2) and torch.equal(mask1, mask2)
    assert [w for batch, _, _ in spread for w in batch] == windows


def test_a_window_too_long_stops_the_scan_with_workers_too(tiny_tokenizer):  # noqa: F811
    windows = random_windows(20)
    windows[13] = ScanWindow("chrX", 500, 900, "-", "ACGT" * 100, 0.0)
    for workers in (0, 1):
        with pytest.raises(InputError, match=r"window chrX:500-900 \(- strand, 400 bp\) needs \d+ tokens"):
            list(window_batches(iter(windows), tiny_tokenizer, 4, 64, workers=workers))


def test_auto_workers_only_for_a_gpu_and_a_tokenizer_slower_than_a_table(tiny_tokenizer, monkeypatch):  # noqa: F811
    monkeypatch.setattr(batching.os, "cpu_count", lambda: 16)
    gpu, cpu = torch.device("cuda"), torch.device("cpu")
    assert auto_workers(tiny_tokenizer, gpu) == 4
    assert auto_workers(tiny_tokenizer, cpu) == 0
    assert auto_workers(char_tokenizer(), gpu) == 0
    monkeypatch.setattr(batching.os, "cpu_count", lambda: 2)
    assert auto_workers(tiny_tokenizer, gpu) == 0


def test_pinned_batches_hold_the_same_tokens():
    if not torch.cuda.is_available():
        pytest.skip("pinning memory needs CUDA")
    windows = random_windows(10)
    plain = list(window_batches(iter(windows), char_tokenizer(), 4, 64))
    pinned = list(window_batches(iter(windows), char_tokenizer(), 4, 64, pin_memory=True))
    assert all(ids.is_pinned() and torch.equal(ids, ref) for (_, ids, _), (_, ref, _) in zip(pinned, plain))


def test_prefetch_stops_its_thread_when_the_consumer_stops_early():
    produced = []

    def items():
        for i in range(1000):
            produced.append(i)
            yield i

    before = {t.ident for t in threading.enumerate()}
    stream = prefetch(items(), depth=2)
    assert [next(stream) for _ in range(3)] == [0, 1, 2]
    stream.close()  # the consumer stops, e.g. on a full disk: the producer is blocked on a full queue
    assert not [t for t in threading.enumerate() if t.ident not in before]  # no thread outlives it
    assert len(produced) < 10

    def failing():
        yield 1
        raise OSError("disk gone")

    with pytest.raises(OSError, match="disk gone"):
        list(prefetch(failing(), depth=2))
