"""What the benchmark scripts share: first-call timing and peak memory on the device the work runs
on, relative errors, and the record of the machine (device, versions, clocks, power limit) and of
the tree (git commit, dirty flag: ``benchmarks/common/provenance.py``). Repeated timing: ``timing.py``.

Every decision is taken from the device of the measured tensors, never from
``torch.cuda.is_available()``: a ``--smoke`` run on a GPU machine runs on CPU (the Triton
interpreter) and must not use CUDA events on it.
"""
from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import torch

from benchmarks.common import REPO
from benchmarks.common.provenance import recorded_state
from benchmarks.common.results import default_out, script_command, write_json


def is_gpu(device) -> bool:
    return torch.device(device).type == "cuda"


def sync(device) -> None:
    if is_gpu(device):
        torch.cuda.synchronize(device)


def wall_s(fn, device) -> float:
    """Seconds of one call of ``fn``, synchronised (first calls: compilation, plan building)."""
    sync(device)
    start = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - start


def peak_mib(fn, device) -> float | None:
    """Peak CUDA memory of one call of ``fn`` above what was allocated before it (None off CUDA)."""
    if not is_gpu(device):
        fn()
        return None
    sync(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    fn()
    sync(device)
    return (torch.cuda.max_memory_allocated(device) - base) / 2**20


def relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    """``|a - b| / |b|`` in the Frobenius norm, in fp32."""
    return ((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-12)).item()


def _run(cmd: list[str], limit: int = 12000) -> str:
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO)
        return (result.stdout or result.stderr)[:limit].strip()
    except (OSError, subprocess.SubprocessError) as err:
        return f"unavailable: {err}"


def versions() -> dict:
    """Installed versions of the packages a result depends on (None when not installed)."""
    found = {"python": platform.python_version()}
    for name in ("torch", "triton", "numpy", "transformers", "lightning", "hydra-core", "omegaconf"):
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = None
    found["cuda"] = torch.version.cuda
    return found


def machine(device) -> dict:
    """The machine of ``device``: ``device_type`` and ``device`` (the GPU's name, or the CPU's
    architecture); on CUDA its SMs and memory, on a CPU the cores this process may use (``cpus``).
    ``results.machine_slug`` names result folders from it."""
    if is_gpu(device):
        props = torch.cuda.get_device_properties(device)
        return {"device_type": "cuda", "device": props.name, "sm_count": props.multi_processor_count,
                "memory_gib": round(props.total_memory / 2**30, 1)}
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"device_type": torch.device(device).type, "device": f"cpu ({platform.processor() or platform.machine()})",
            "cpus": cpus}


def environment(device) -> dict:
    """Date, host, the tree (``commit``, ``dirty``, ``git_status``: :func:`provenance.recorded_state`),
    versions, :func:`machine` and, on CUDA, the GPU's clocks and power limit."""
    env = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "host": platform.node(), **recorded_state(),
           "versions": versions(), "interpreter": os.environ.get("TRITON_INTERPRET") == "1", **machine(device)}
    if is_gpu(device):
        env.update(sdpa_cudnn_enabled=torch.backends.cuda.cudnn_sdp_enabled(),
                   nvidia_smi_gpu=_run(["nvidia-smi", "--format=csv", "--query-gpu=name,power.limit,power.draw,"
                                        "clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu"]),
                   nvidia_smi_q=_run(["nvidia-smi", "-q", "-d", "CLOCK,POWER,PERFORMANCE"]))
    return env


def alternating_rounds(steps: dict, rounds: int, per_round: int) -> dict[str, list[float]]:
    """Seconds per call of each ``steps[name]()``, timed in ``rounds`` rounds of ``per_round``
    calls that alternate between the names, so that load on the machine hits every one alike.
    Returns ``{name: [seconds per call in each round]}`` (no warm-up: call each first)."""
    timings: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(rounds):
        for name, step in steps.items():
            start = time.perf_counter()
            for _ in range(per_round):
                step()
            timings[name].append((time.perf_counter() - start) / per_round)
    return timings


def rounds_report(benchmark: str, timings: dict[str, list[float]], script: str, argv: list[str] | None,
                  **fields) -> dict:
    """The JSON record of an :func:`alternating_rounds` benchmark: ``fields``, each name's median
    seconds per step (``seconds_per_step``), every round, the command (of ``script``, the caller's
    ``__file__``) and the machine."""
    median = {name: statistics.median(values) for name, values in timings.items()}
    return {"benchmark": benchmark, **fields, "seconds_per_step": median, "all_rounds": timings,
            "command": script_command(script, argv), "environment": environment("cpu")}


def save_report(report: dict, out: Path | None) -> Path:
    """Write ``report`` (its ``benchmark`` name and ``environment`` included) as JSON to ``out``, by
    default to its place in the results layout, and say where."""
    path = write_json(out or default_out(report["benchmark"], report["environment"]), report)
    print(f"wrote {path}")
    return path
