"""Host side of the Triton kernels: direct launches and scratch buffers kept per shape.

Eager attention is host-bound at small and medium sizes: on an H100 at 4K tokens, one
forward+backward took 0.59 ms of host time for 0.13 ms of GPU work, spent in Triton's generic
``JITFunction.run`` (argument binding, per-argument specialisation, option parsing) for each of
five launches, in allocating scratch tensors, and in two zero fills. This module removes those.

- :class:`KernelLauncher` keeps, per kernel, the compiled kernel of every specialisation it has
  launched, keyed by what Triton specialises on, and launches it through its binary launcher, as
  ``JITFunction.run`` itself does at its end. The key holds every integer argument's *value* (Triton
  specialises integers on ``== 1``, divisibility by 16 and width), every tensor's dtype and whether
  its address is 16-byte aligned (Triton's pointer specialisation), the constexprs, the launch
  options and the device. So a cached kernel is only reused where ``JITFunction.run`` would have
  picked the same one. Under the interpreter (``TRITON_INTERPRET=1``) there is no compiled
  kernel and every call goes through ``fn[grid](...)``.
- :func:`scratch` returns a buffer per (role, shape, dtype, device, stream), allocated once. Buffers
  that must start at zero (split-row arrival counters, split-row gradient accumulators) are zeroed
  once, when created; the kernels that consume them put the zeros back (see ``triton_forward`` and
  ``triton_backward``), so no call fills them again.

Scratch buffers are shared by every call on one stream, which runs its kernels in order; calls on
different streams get different buffers. A CUDA-graph capture runs on its own stream, so it gets
(and keeps) its own buffers.
"""
from __future__ import annotations

import contextlib
import functools
from collections import OrderedDict

import numpy as np
import torch
from triton import knobs
from triton.runtime.driver import driver

__all__ = ["KernelLauncher", "clear_scratch", "scratch", "scratch_guard"]

MAX_SCRATCH = 64  # buffers kept; the oldest is dropped first (the caching allocator reuses its memory)
_scratch: OrderedDict[tuple, torch.Tensor] = OrderedDict()


def _stream_id(device: torch.device) -> int:
    return torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0


def scratch(role: str, shape: tuple[int, ...], dtype: torch.dtype, device: torch.device,
            zero: bool = False) -> torch.Tensor:
    """A buffer of ``shape`` for ``role``, the same tensor on every call with the same key.

    ``zero=True``: zeroed when created, and the caller's kernels must leave it zeroed again.
    """
    device = torch.device(device)
    key = (role, tuple(shape), dtype, device, _stream_id(device))
    buf = _scratch.get(key)
    if buf is None:
        buf = (torch.zeros if zero else torch.empty)(shape, dtype=dtype, device=device)
        _scratch[key] = buf
        if len(_scratch) > MAX_SCRATCH:
            _scratch.popitem(last=False)
    else:
        _scratch.move_to_end(key)
    return buf


def clear_scratch() -> None:
    """Drop every scratch buffer (tests; freeing memory between unrelated workloads)."""
    _scratch.clear()


@contextlib.contextmanager
def scratch_guard():
    """Drop every scratch buffer if the launches inside fail part-way.

    A failure between the launch that dirties a zeroed buffer and the one that re-zeroes it would
    otherwise leave it dirty for the next call (wrong results, no error).
    """
    try:
        yield
    except BaseException:
        clear_scratch()
        raise


class _Uncacheable(Exception):
    """An argument whose Triton specialisation this module does not model."""


_PLAIN = (int, bool, str, type(None))  # kept whole in the key, tagged with their type: True and 1 differ


def _spec(value):
    """What of ``value`` Triton's specialisation can depend on (see the module docstring), with its
    kind: ``(type, value)`` for ints, bools, strings and None; ``(dtype, 16-byte aligned)`` for
    tensors; ``float`` for floats (passed as fp32 whatever their value)."""
    kind = type(value)
    if kind in _PLAIN:
        return kind, value
    if isinstance(value, torch.Tensor):
        return value.dtype, value.data_ptr() % 16 == 0
    if kind is float:
        return float
    raise _Uncacheable(kind.__name__)


class KernelLauncher:
    """Launch a ``@triton.jit`` kernel like ``fn[grid](...)``, reusing its compiled kernel.

    >>> launch = KernelLauncher(_attn_fwd_kernel)
    >>> launch((grid,), q, k, ..., BLOCK=64, num_warps=4, num_stages=3)

    Kernel parameters come positionally or by name (no defaults); the other keywords are launch
    options (``num_warps``, ``num_stages``, ``maxnreg``). The first call with a new key goes through
    ``fn[grid](...)`` (compiling if needed) and keeps the compiled kernel it returns.
    """

    def __init__(self, fn):
        self.fn = fn
        params = getattr(fn, "params", None)  # None for the interpreter's InterpretedFunction
        self.param_names = None if params is None else tuple(p.name for p in params)
        self.compiled: dict[tuple, object] = {}
        self.direct_launches = 0  # launches that skipped JITFunction.run (tests, benchmarks)

    def _key(self, values: list, options: dict, device: int) -> tuple:
        return device, tuple(sorted(options.items())), tuple(map(_spec, values))

    def __call__(self, grid: tuple[int, ...], *args, **kwargs) -> None:
        if self.param_names is None:
            self.fn[grid](*args, **kwargs)
            return
        # every parameter in signature order, constexprs included: what JITFunction.run passes on
        values = list(args) + [kwargs.pop(name) for name in self.param_names[len(args):]]
        device = driver.active.get_current_device()
        try:
            key = self._key(values, kwargs, device)
        except _Uncacheable:
            self.fn[grid](*values, **kwargs)
            return
        kernel = self.compiled.get(key)
        if kernel is None:
            kernel = self.fn[grid](*values, **kwargs)
            kernel = kernel.result() if hasattr(kernel, "result") else kernel  # asynchronous compilation
            if all(hasattr(kernel, name) for name in ("run", "function", "packed_metadata", "launch_metadata")):
                self.compiled[key] = kernel
            return
        grid = tuple(grid) + (1,) * (3 - len(grid))
        stream = driver.active.get_current_stream(device)
        metadata = kernel.launch_metadata(grid, stream, *values)
        kernel.run(grid[0], grid[1], grid[2], stream, kernel.function, kernel.packed_metadata, metadata,
                   knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *values)
        self.direct_launches += 1


def _index_from_data(data: np.ndarray) -> int:
    """``int()`` of a one-element array of any rank (numpy >= 2.4 refuses ``int`` of a 1-d array)."""
    return int(np.asarray(data).reshape(()))


def _fix_interpreter_index() -> None:
    """Triton < 3.7's interpreter turns loop bounds into ints with ``int(handle.data)``, which
    numpy >= 2.4 refuses for 1-element arrays (triton-lang/triton#9171): every kernel here fails
    under ``TRITON_INTERPRET=1``. Wrap its tensor patching to convert with ``_index_from_data``.
    Harmless where Triton already does that (3.9 squeezes the array).
    """
    try:
        from triton.runtime import interpreter
    except ImportError:
        return
    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "_bigbird_index_fix", False):
        return

    @functools.wraps(patch)
    def patched(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: _index_from_data(self.handle.data))

    patched._bigbird_index_fix = True
    interpreter._patch_lang_tensor = patched


_fix_interpreter_index()
