"""Shared helpers: compose the real Hydra config into tmp_path, and run the CLI in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

# Without CUDA, run the Triton kernels under the Triton interpreter on CPU. TRITON_INTERPRET is read
# when a @triton.jit function is defined, i.e. when bigbird_dna.attention.triton_* is first
# imported, by whichever test directory imports the package first: so it is set here, in the root
# conftest, which loads before every test module. An explicit setting wins.
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# .ci/run runs two pytest-xdist workers on a 2-core machine: each worker, and every process it
# starts (CLI runs, DDP ranks), computes on one thread, so the two workers never fight over the cores.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
LAMBDA = REPO / "tests" / "files" / "lambda_phage.fa"

# Small enough for CPU tests: conf/debug/fast.yaml (a 2-layer encoder over 256-token windows, a
# 256-entry vocabulary, 4 steps).
FAST_OVERRIDES = ["debug=fast"]


def run_cli(module: str, *args: str, cwd: Path | None = None, timeout: int = 600,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m module args...``; returns the completed process (stdout/stderr as text)."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd or REPO, env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def compose(overrides: list[str], run_dir: Path):
    """The composed train config with ``overrides``, its output dir set to ``run_dir``
    (:func:`~bigbird_dna.training.compose.compose_train_config`, as ``evaluate`` composes it)."""
    from bigbird_dna.training.compose import compose_train_config

    return compose_train_config(list(overrides), run_dir)


@pytest.fixture
def train_in_process(tmp_path):
    """Run ``bigbird_dna.train.run`` in this process with FAST_OVERRIDES plus the given ones."""
    from bigbird_dna.train import run

    def _train(*overrides: str, run_dir: Path | None = None):
        run_dir = run_dir or tmp_path / "run"
        cfg = compose([*FAST_OVERRIDES, *overrides], run_dir)
        return run(cfg), run_dir

    return _train

