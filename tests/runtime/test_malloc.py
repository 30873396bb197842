"""runtime/malloc.py: freed memory stays in the process, so a large buffer allocated, written and
freed every batch is not faulted in from the kernel again (the system time of CPU prediction)."""

from __future__ import annotations

import subprocess
import sys

_LOOP = """
import ctypes, resource, sys
from bigbird_dna.runtime.malloc import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "keep" else None
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_void_p]
size = 40 << 20  # above glibc's largest dynamic mmap threshold (32 MiB), like a batch's intermediates
libc.free(ctypes.memset(libc.malloc(size), 1, size))
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(10):  # a batch loop: the same large buffer allocated, written and freed
    libc.free(ctypes.memset(libc.malloc(size), 1, size))
print(kept, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _faults(mode: str) -> tuple[str, int]:
    out = subprocess.run([sys.executable, "-c", _LOOP, mode], capture_output=True, text=True, check=True).stdout
    kept, faults = out.split()
    return kept, int(faults)


def test_a_large_buffer_reallocated_every_batch_is_not_faulted_in_again():
    kept, faults = _faults("keep")
    _, default_faults = _faults("default")
    pages = (40 << 20) // 4096
    assert kept == "True"
    assert default_faults > 9 * pages  # glibc's default: every loop maps and faults 40 MiB anew
    assert faults < pages // 10  # kept: the loop reuses the pages of the first allocation
