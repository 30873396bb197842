"""Streaming a large v7.3 (HDF5) file stays within a memory budget far below the file's size."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.chromatin.deepsea_files import write_v73_streamed
from tests.conftest import REPO

NUM_SAMPLES = 64_000  # x: 1000 x 4 x 64k uint8 = 256 MB, labels 919 x 64k = 59 MB
RSS_BUDGET_MB = 64
TRACED_BUDGET_MB = 24

# Run in a fresh process, so its peak resident set (VmHWM) measures this read alone.
READER = r"""
import json, sys, tracemalloc
from bigbird_dna.data.chromatin.datamodule import DeepSEASamples
from bigbird_dna.data.chromatin.deepsea import DeepSEAFile

def status_kb(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) for line in handle if line.startswith(field))

samples = DeepSEASamples(DeepSEAFile(sys.argv[1], 919), chunk_size=1024, shuffle=True, seed=0)
rss_before = status_kb("VmRSS:")
tracemalloc.start()
count = index_sum = bases = 0
for seq, labels, index in samples:
    count, index_sum, bases = count + 1, index_sum + index, bases + len(seq) + int(labels.sum() >= 0)
traced_peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"count": count, "index_sum": index_sum, "bases": bases,
                  "rss_growth_mb": (status_kb("VmHWM:") - rss_before) / 1024, "traced_peak_mb": traced_peak / 2**20}))
"""


def _random_slab(start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(start)
    codes = rng.integers(0, 4, (stop - start, 1000), dtype=np.uint8)
    x = (codes[:, None, :] == np.arange(4, dtype=np.uint8)[None, :, None]).astype(np.uint8)  # [n, 4, L]
    return x, (rng.random((stop - start, 919)) < 0.05).astype(np.uint8)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_reading_a_large_v73_file_streams_in_chunks_within_a_memory_budget(tmp_path):
    path = write_v73_streamed(tmp_path / "train.mat", NUM_SAMPLES, _random_slab)
    file_mb = path.stat().st_size / 2**20
    result = subprocess.run([sys.executable, "-c", READER, str(path)], cwd=REPO, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    stats = json.loads(result.stdout.strip().splitlines()[-1])
    print(f"file {file_mb:.0f} MB; peak RSS growth {stats['rss_growth_mb']:.1f} MB; "
          f"peak traced allocations {stats['traced_peak_mb']:.1f} MB")
    assert stats["count"] == NUM_SAMPLES and stats["index_sum"] == NUM_SAMPLES * (NUM_SAMPLES - 1) // 2
    assert stats["bases"] == NUM_SAMPLES * 1001
    assert file_mb > 300
    assert stats["rss_growth_mb"] < RSS_BUDGET_MB
    assert stats["traced_peak_mb"] < TRACED_BUDGET_MB
