"""A real one-node SLURM cluster (workflows/slurm/local_cluster.sh) for the tests in this folder.

The module-scoped fixture installs Debian's slurmctld, slurmd, munge, slurmdbd and MariaDB when they are
absent, starts the daemons with accounting (submitit reads job states only through sacct), and
stops them after the module's tests unless they were already running. The tests are skipped, with the reason,
only where SLURM cannot be installed: not root, no apt-get, or the install fails (e.g. offline).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "workflows" / "slurm" / "local_cluster.sh"


def _cluster(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args, "--accounting"], capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def slurm_cluster():
    """A running local SLURM cluster with accounting; yields the partition name."""
    if os.geteuid() != 0:
        pytest.skip("SLURM tests need root: they install and start slurmctld/slurmd/munge/slurmdbd")
    installed = all(shutil.which(tool) for tool in ("slurmctld", "slurmd", "slurmdbd", "munged", "sbatch"))
    if not installed and not shutil.which("apt-get"):
        pytest.skip("SLURM is not installed and there is no apt-get to install Debian's slurm-wlm packages")
    install = _cluster("install")
    if install.returncode != 0:
        pytest.skip(f"cannot install SLURM with apt-get: {install.stderr.strip()[-800:]}")
    already_up = _cluster("status", timeout=60).returncode == 0
    start = _cluster("ensure")
    if start.returncode != 0:
        pytest.fail(f"SLURM is installed but did not start:\n{start.stderr[-3000:]}")
    yield os.environ.get("SLURM_LOCAL_PARTITION", "debug")
    if not already_up:
        _cluster("stop", timeout=300)


def job_state(job_id: str) -> dict[str, str]:
    """``scontrol show job`` fields of a job (state, restarts, exit code...)."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True).stdout
    return dict(field.split("=", 1) for field in out.split() if "=" in field)


def wait_for(predicate, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
