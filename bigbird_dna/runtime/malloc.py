"""Keep freed heap memory in the process, so that CPU inference does not spend its time in the kernel.

PyTorch's CPU allocator has no cache: every tensor is a ``malloc`` and a ``free``. A forward pass
of the tiny encoder over a batch of 32 windows of 502 tokens allocates tens of ~30-MiB
intermediates (gathered keys and values, attention scores). glibc serves allocations above its
mmap threshold (dynamic, at most 32 MiB) with a fresh ``mmap`` and returns them with ``munmap``,
and trims the heap top above its trim threshold, so each forward pass faults its working set in
again page by page: on 2 cores a third of predict's CPU time was system time (24 million minor
faults to score 1.6 Mbp). Raising both thresholds once keeps the freed pages for the next batch.

The cost is that the process keeps its peak heap until it exits, which a batch job that reaches
its peak at the first batch does anyway. Only glibc has ``mallopt`` with these parameters; on other
C libraries this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # glibc's <malloc.h> parameter numbers
M_MMAP_THRESHOLD = -3
KEEP_BYTES = 1 << 30  # allocations below 1 GiB come from (and go back to) the heap, which is not trimmed


def keep_freed_memory() -> bool:
    """Stop glibc from returning freed memory to the kernel between batches; True if it took.

    Call it once, from a command-line entry point (it changes the whole process's allocator).
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
        mallopt = libc.mallopt
        return bool(mallopt(M_MMAP_THRESHOLD, KEEP_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_BYTES))
    except (OSError, AttributeError, TypeError):  # no C library found, or one without mallopt (macOS)
        return False
