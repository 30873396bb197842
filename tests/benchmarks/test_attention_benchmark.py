"""``benchmarks/attention.py --smoke`` runs on CPU under the interpreter on any machine."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_smoke_mode_stays_on_cpu_where_cuda_is_available(tmp_path):
    """On a GPU machine the smoke run once timed interpreter calls with do_bench and CUDA events.

    Here CUDA is faked as available: every timing decision must follow the tensors' device.
    """
    pytest.importorskip("triton")
    out = tmp_path / "attention.json"
    argv = ["attention.py", "--smoke", "--block", "16", "--head-dim", "16", "--variants", "loop",
            "--methods", "triton", "sdpa", "--out", str(out)]
    code = ("import runpy, sys, torch; torch.cuda.is_available = lambda: True; "
            f"sys.argv = {argv!r}; runpy.run_path('benchmarks/attention.py', run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-4000:]
    payload = json.loads(out.read_text())
    assert payload["environment"]["device_type"] == "cpu" and payload["environment"]["interpreter"]
    rows = {row["method"]: row for row in payload["results"]}
    assert set(rows) == {"triton:loop", "sdpa:math"} and rows["triton:loop"]["peak_mib"] is None
    assert rows["triton:loop"]["gate"]["passed"] and "graph_fwd_bwd_ms" not in rows["triton:loop"]
    assert "| 1 | 192 | no | triton:loop |" in result.stdout
