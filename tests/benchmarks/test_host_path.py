"""``benchmarks/host_path.py``: our attention call's host time with stand-in kernels, on any machine."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_host_path_times_every_launch_without_running_a_kernel(tmp_path):
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the compiled-launch path
    out = tmp_path / "host.json"
    result = subprocess.run([sys.executable, "benchmarks/host_path.py", "--seq", "4096", "--steps", "5",
                             "--out", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    row = json.loads(out.read_text())["rows"][0]
    # forward (fused merge: one kernel), then Delta, dQ, dK/dV and the scatter of the split global rows
    assert row["launches_per_call"] == 5 and row["seq"] == 4096
    assert 0 < row["fwd_us"] < row["fwd_bwd_us"] and row["bwd_us"] > 0
