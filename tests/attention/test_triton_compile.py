"""Compile the Triton kernels for CUDA without a GPU and check what the compiler made of them.

Catches what the interpreter lets through (non-constexpr globals, type errors in dead branches,
shared memory beyond an A100's), and pins the software-pipelining facts behind
``KernelOptions.index_mode``: with the block index loaded inside the loop the compiled loop waits
for every K/V load (``async_wait {num = 0}``); with the indices preloaded, loads run ahead.
Compiling needs TRITON_INTERPRET unset, so each test runs its check in a subprocess.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("triton")
pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton.backends.nvidia") is None,
                                reason="no CUDA backend in triton")
REPO = Path(__file__).resolve().parents[2]
FP32_BUFFERS = {"LSE", "DELTA", "O_PART", "LSE_PART", "DQ_ACC", "DK_ACC", "DV_ACC", "ACC", "DQ_ATOMIC"}


def compile_kernel(kernel, arch: int, dtype: str, block: int, dim: int, even: bool, kpm: bool,
                   preload: bool, options: dict, atomic_dq: bool = False):
    """``triton.compile`` one kernel for sm_<arch> the way the JIT specialises real calls
    (16-aligned pointers and strides; front end, LLVM and ptxas, no GPU)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    consts = dict(BLOCK=block, HEAD_DIM=dim, EVEN_T=even, HAS_KPM=kpm, MASK_KEYS=kpm or not even,
                  DOT_PRECISION="ieee" if dtype == "fp32" else None, CHUNK=32 if preload else 1, PRELOAD=preload,
                  FUSED_MERGE=preload,  # the fused forward merge is compiled along with preload
                  ATOMIC_DQ=atomic_dq)
    signature, constexprs = {}, {}
    for param in kernel.params:
        name = param.name
        if param.is_constexpr:
            signature[name], constexprs[name] = "constexpr", consts[name]
        elif name.isupper():
            signature[name] = ("*fp32" if name in FP32_BUFFERS else "*u8" if name == "KPM"
                               else "*i32" if name == "COUNTER" else f"*{dtype}")
        elif name.startswith(("item_", "group_", "q_group", "k_group")) or name.endswith("_idx"):
            signature[name] = "*i32"
        else:
            signature[name] = "fp32" if name.endswith("scale") else "i32"
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(kernel.arg_names)
             if signature[name].startswith("*") or name.startswith("stride") or name == "seq_len"}
    return triton.compile(ASTSource(kernel, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32),
                          options=options)


def compile_every_kernel(arch: int, configs=None) -> list[str]:
    """Compile each kernel in both index modes for every (dtype, block, dim, even, kpm) config.

    Returns the failures (compile errors, or more shared memory than an A100's 163 KiB).
    """
    from bigbird_dna.attention import triton_backward as bwd
    from bigbird_dna.attention import triton_forward as fwd
    from bigbird_dna.attention.triton_kernels import _launch_config

    kernels = [(fwd._attn_fwd_kernel, False), (fwd._attn_fwd_merge_kernel, False), (bwd._bwd_delta_kernel, True),
               (bwd._bwd_dq_kernel, True), (bwd._bwd_dkdv_kernel, True), (bwd._bwd_scatter_kernel, True),
               (bwd._bwd_dq_convert_kernel, True)]
    failures = []
    configs = configs or [("bf16", 64, 64, True, False), ("fp32", 32, 128, False, True),
                          ("fp16", 128, 128, False, True)]
    for dtype, block, dim, even, kpm in configs:
        for kernel, backward in kernels:
            modes = [(False, False), (True, False)] if "PRELOAD" in kernel.arg_names else [(False, False)]
            if "ATOMIC_DQ" in kernel.arg_names:
                modes.append((True, True))
            for preload, atomic_dq in modes:
                where = f"sm_{arch} {kernel.__name__} {dtype} b{block} d{dim} preload={preload} atomic_dq={atomic_dq}"
                options = _launch_config(block, dim, 4 if dtype == "fp32" else 2, backward)
                try:
                    compiled = compile_kernel(kernel, arch, dtype, block, dim, even, kpm, preload, options, atomic_dq)
                except Exception as err:  # noqa: BLE001 - report every failure
                    failures.append(f"{where}: {err}")
                    continue
                if compiled.metadata.shared > 163 * 1024:  # an A100's opt-in maximum per block
                    failures.append(f"{where}: {compiled.metadata.shared} bytes of shared memory")
    return failures


def registers(compiled) -> int:
    """Registers per thread of a compiled kernel, from Triton's bundled cuobjdump."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin") as cubin:
        cubin.write(compiled.asm["cubin"])
        cubin.flush()
        usage = subprocess.run([str(tool), "--dump-resource-usage", cubin.name], capture_output=True,
                               text=True, check=True).stdout
    return int(re.search(r"REG:(\d+)", usage).group(1))


def pipelining_report() -> dict:
    """For the three looping kernels at bf16, block 64, D 64 on sm_90: the ``num`` of every
    ``async_wait`` in the TTGIR, per (kernel, padding mask, index mode), plus the dK/dV registers
    under the ``KernelOptions`` warps/register-cap variants."""
    import triton

    from bigbird_dna.attention import triton_backward as bwd
    from bigbird_dna.attention import triton_forward as fwd
    from bigbird_dna.attention.triton_kernels import VARIANTS, _dkdv_config, _launch_config

    report = {"triton": triton.__version__, "waits": {}, "dkdv_registers": {}}
    backward_config = _launch_config(64, 64, 2, backward=True)
    for kernel in (fwd._attn_fwd_kernel, bwd._bwd_dq_kernel, bwd._bwd_dkdv_kernel):
        for kpm in (False, True):
            for preload in (False, True):
                compiled = compile_kernel(kernel, 90, "bf16", 64, 64, True, kpm, preload, backward_config)
                waits = [int(n) for n in re.findall(r"async_wait[^\n]*\{num = (\d+)", compiled.asm["ttgir"])]
                report["waits"][f"{kernel.__name__} kpm={kpm} {'preload' if preload else 'loop'}"] = waits
    for name in ("preload", "preload-dkdv-w8", "preload-dkdv-r168", "preload-fused-atomic-dq",
                 "preload-fused-atomic-dq-w8"):
        options = VARIANTS[name]
        config = _dkdv_config(backward_config, options)
        compiled = compile_kernel(bwd._bwd_dkdv_kernel, 90, "bf16", 64, 64, True, False, True, config,
                                  atomic_dq=options.dq == "atomic")
        report["dkdv_registers"][name] = registers(compiled)
        if options.dq == "atomic":
            report["dkdv_atomics"] = re.findall(r"\b(?:red|atom)\.[\w.]+", compiled.asm["ptx"])
            report["dkdv_shared_atomic"] = compiled.metadata.shared
    return report


def run_in_subprocess(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=600)


def test_kernels_compile_for_hopper_and_ampere_without_a_gpu():
    code = ("import sys; from tests.attention.test_triton_compile import compile_every_kernel as c; "
            "f = c(90) + c(80, [('fp16', 64, 64, True, True)]); print(*f, sep='\\n'); sys.exit(bool(f))")
    result = run_in_subprocess(code)
    assert result.returncode == 0, result.stdout + result.stderr[-4000:]


def test_preloaded_indices_let_the_sm90_loop_prefetch_and_the_register_cap_holds():
    """Facts of triton 3.9 (the GPU image's 3.6 compiles the same waits): loop mode without a
    padding mask waits with num = 0 in all three kernels; preload waits with num = 2 (forward,
    dQ) and 4 (dK/dV), i.e. loads run 2 (4) ahead."""
    result = run_in_subprocess("import json; from tests.attention.test_triton_compile import pipelining_report as r; "
                               "print(json.dumps(r()))")
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    waits = report["waits"]
    for kernel in ("_attn_fwd_kernel", "_bwd_dq_kernel", "_bwd_dkdv_kernel"):
        ahead = 4 if kernel == "_bwd_dkdv_kernel" else 2
        for kpm in (False, True):
            loop, preload = waits[f"{kernel} kpm={kpm} loop"], waits[f"{kernel} kpm={kpm} preload"]
            assert preload and max(preload) >= ahead, (kernel, kpm, preload)
            assert max(preload) >= max(loop), (kernel, kpm, loop, preload)
        assert max(waits[f"{kernel} kpm=False loop"]) == 0, report  # the stall that preload removes
    registers_used = report["dkdv_registers"]
    assert registers_used["preload-dkdv-r168"] <= 168 < registers_used["preload"], registers_used
    assert registers_used["preload-dkdv-w8"] < registers_used["preload"], registers_used
    # dq="atomic": dS K is one more product in dK/dV's loop: 215 registers at 4 warps (still 2
    # programs per SM, no spill), and its adds go out as 4-wide fp32 reductions.
    assert registers_used["preload"] < registers_used["preload-fused-atomic-dq"] <= 255, registers_used
    atomics = report["dkdv_atomics"]
    assert atomics and all(op == "red.global.gpu.relaxed.add.v4.f32" for op in atomics), set(atomics)
    assert 2 * report["dkdv_shared_atomic"] <= 227 * 1024  # two programs fit an H100 SM's shared memory
