"""The DeepSEA training bundle (``train.mat``, ``valid.mat``, ``test.mat``) as it is distributed.

Two MATLAB formats, with their axes in opposite orders:

- ``train.mat`` is MATLAB **v7.3, i.e. HDF5**. h5py shows MATLAB's arrays with their axes reversed:
  ``trainxdata`` is ``(1000, 4, N)`` (position, base, sample) and ``traindata`` is ``(919, N)``. It
  holds 4.4M windows (17 GB), so it is read lazily, one slab of samples at a time, through a handle
  opened in the process that reads (one per DataLoader worker), never inherited through fork.
- ``valid.mat`` and ``test.mat`` are MATLAB **v5** (``scipy.io.loadmat``): ``validxdata`` is
  ``(N, 4, 1000)`` and ``validdata`` is ``(N, 919)``. Keys and shapes are checked with
  ``scipy.io.whosmat`` before anything is loaded; the arrays are loaded on the first read.

The format is told by the file's header, not its name. Any axis order is accepted as long as it is
unambiguous: the base axis has size 4, the label axis ``num_labels``, and x and the labels share the
sample axis; where several orders fit, the format's DeepSEA order wins. Reads return
``x [n, 4, L]`` and ``labels [n, C]`` whatever the order on disk.

One-hot channel order is **A, G, C, T**; an all-zero column is N. The reverse complement of a window
is the window with both its position and its base axes reversed.

**Strands.** Valid and test hold every window twice, forward and reverse complement. The order
(the second half mirrors the first, or rows alternate) has no primary source, so
:func:`detect_rc_layout` checks it on the data; predictions of a pair are averaged at evaluation.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from bigbird_dna.data.chromatin.onehot import check_values, decode_onehot
from bigbird_dna.errors import InputError, require_extra


def _scipy_io():
    """``scipy.io``, from the ``[deepsea]`` extra: only .mat files need it."""
    return require_extra("scipy.io", "deepsea", "reading DeepSEA .mat files")


RC_LAYOUTS = ("halves", "interleaved")


def _file_format(path: Path) -> str:
    """``"hdf5"`` (MATLAB v7.3 or plain HDF5) or ``"mat5"``."""
    if h5py.is_hdf5(path):
        return "hdf5"
    scipy_io = _scipy_io()
    try:
        major, _ = scipy_io.matlab.matfile_version(str(path))
    except Exception as err:  # scipy raises plain ValueError/TypeError on foreign bytes
        raise InputError(f"{path} is neither a MATLAB .mat file nor HDF5 ({err}). Point the data config "
                         "at the DeepSEA bundle's train.mat, valid.mat or test.mat.") from err
    if major != 1:
        raise InputError(f"{path} is a MATLAB v4 file; DeepSEA files are v5 or v7.3. Re-save it with "
                         "MATLAB's save -v7 or -v7.3.")
    return "mat5"


def _pick_key(keys: list[str], wanted: str | None, suffix: str, path: Path, what: str) -> str:
    if wanted is not None:
        if wanted not in keys:
            raise InputError(f"{path} has no {what} array {wanted!r}; it holds {sorted(keys)}. Set "
                             "data.x_key/data.y_key to the arrays that hold the sequences and labels.")
        return wanted
    found = [k for k in keys if k.endswith(suffix)]
    if len(found) != 1:
        raise InputError(f"cannot tell which array of {path} holds the {what}: expected exactly one key "
                         f"ending in {suffix!r} (like trainxdata/validxdata), found {sorted(keys)}. "
                         "Set data.x_key and data.y_key.")
    return found[0]


@dataclass(frozen=True)
class DeepSEALayout:
    """Where the arrays of one file are and how their axes map to ``(sample, base, position)``.

    Attributes:
        x_axes: axes of the stored x array that hold (sample, base, position).
        y_axes: axes of the stored label array that hold (sample, label).
    """

    format: str
    x_key: str
    y_key: str
    x_axes: tuple[int, int, int]
    y_axes: tuple[int, int]
    num_samples: int
    seq_len: int
    num_labels: int


def _resolve_layout(path: Path, fmt: str, shapes: dict[str, tuple[int, ...]], num_labels: int,
                    x_key: str | None, y_key: str | None) -> DeepSEALayout:
    keys = list(shapes)
    x_key = _pick_key(keys, x_key, "xdata", path, "one-hot sequences")
    # DeepSEA pairs trainxdata with traindata, validxdata with validdata, ...
    y_key = _pick_key(keys, y_key or x_key.removesuffix("xdata") + "data", "data", path, "labels")
    x_shape, y_shape = tuple(shapes[x_key]), tuple(shapes[y_key])
    native = fmt == "hdf5"  # h5py shows MATLAB's axes reversed
    if len(y_shape) != 2:
        raise InputError(f"labels {path}:{y_key} have shape {y_shape}; expected 2 axes "
                         f"({'(labels, samples)' if native else '(samples, labels)'}).")
    y_orders = [o for o in ([(1, 0), (0, 1)] if native else [(0, 1), (1, 0)]) if y_shape[o[1]] == num_labels]
    if not y_orders:
        raise InputError(f"labels {path}:{y_key} have shape {y_shape}, but task.num_labels={num_labels}: "
                         "the label count disagrees with the config. Set task.num_labels (and task.groups) "
                         "to the file's label count, or use the file made for this label set.")
    y_axes = y_orders[0]
    num_samples = y_shape[y_axes[0]]
    if len(x_shape) != 3:
        raise InputError(f"sequences {path}:{x_key} have shape {x_shape}; expected 3 axes "
                         f"({'(position, 4 bases, samples)' if native else '(samples, 4 bases, position)'}).")
    preferred = [(2, 1, 0) if native else (0, 1, 2)]
    candidates = preferred + [p for p in itertools.permutations(range(3)) if p not in preferred]
    fits = [p for p in candidates if x_shape[p[1]] == 4 and x_shape[p[0]] == num_samples]
    if not fits:
        raise InputError(f"sequences {path}:{x_key} have shape {x_shape}, which does not fit {num_samples} "
                         f"samples (from labels {y_key} {y_shape}) one-hot encoded over 4 bases. Check that "
                         "x and labels come from the same file and split.")
    x_axes = fits[0]
    return DeepSEALayout(fmt, x_key, y_key, x_axes, y_axes, num_samples, x_shape[x_axes[2]], num_labels)


class DeepSEAFile:
    """Lazy, chunked access to one DeepSEA ``.mat`` file (v7.3/HDF5 or v5).

    Args:
        path: the file.
        num_labels: labels per sample the config expects (919 for DeepSEA).
        x_key, y_key: array names; ``None`` finds the one key ending in ``xdata`` and its ``data``.

    Raises:
        InputError: missing file or keys, shapes that do not fit, or a label count that disagrees
            with ``num_labels``.
    """

    def __init__(self, path: str | os.PathLike, num_labels: int, x_key: str | None = None,
                 y_key: str | None = None):
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise InputError(f"DeepSEA file not found: {self.path}. Point data.train/data.val/data.test at "
                             "the bundle's train.mat, valid.mat and test.mat.")
        fmt = _file_format(self.path)
        if fmt == "hdf5":
            with h5py.File(self.path, "r") as handle:
                shapes = {k: v.shape for k, v in handle.items() if isinstance(v, h5py.Dataset)}
        else:
            shapes = {name: shape for name, shape, _ in _scipy_io().whosmat(str(self.path))}
        self.layout = _resolve_layout(self.path, fmt, shapes, num_labels, x_key, y_key)
        self._arrays: tuple | None = None
        self._pid: int | None = None

    def __len__(self) -> int:
        return self.layout.num_samples

    @property
    def seq_len(self) -> int:
        return self.layout.seq_len

    def _open(self) -> tuple:
        # An HDF5 handle inherited through fork is not safe to read from: one per process.
        if self._arrays is None or (self.layout.format == "hdf5" and self._pid != os.getpid()):
            if self.layout.format == "hdf5":
                handle = h5py.File(self.path, "r")
                self._arrays = (handle, handle[self.layout.x_key], handle[self.layout.y_key])
            else:  # v5 cannot be read in parts: load once, shared copy-on-write by forked workers
                mat = _scipy_io().loadmat(str(self.path), variable_names=[self.layout.x_key, self.layout.y_key])
                self._arrays = (None, mat[self.layout.x_key], mat[self.layout.y_key])
            self._pid = os.getpid()
        return self._arrays

    def load(self) -> None:
        """Load a v5 file's arrays now (a no-op for HDF5): called in the main process, so that forked
        DataLoader workers share one copy instead of loading one each."""
        if self.layout.format == "mat5":
            self._open()

    def read(self, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Samples ``[start, stop)`` as ``(x [n, 4, L], labels [n, C])`` in the stored dtypes."""
        _, x, y = self._open()
        lay = self.layout
        x_index = [slice(None)] * 3
        x_index[lay.x_axes[0]] = slice(start, stop)
        y_index = [slice(None)] * 2
        y_index[lay.y_axes[0]] = slice(start, stop)
        return np.asarray(x[tuple(x_index)]).transpose(lay.x_axes), np.asarray(y[tuple(y_index)]).transpose(lay.y_axes)

    def read_sequences(self, start: int, stop: int) -> tuple[list[str], np.ndarray]:
        """Samples ``[start, stop)`` as ``(strings, labels [n, C] float32)``.

        Raises:
            InputError: a label other than 0 or 1, or a position with more than one base set.
        """
        x, y = self.read(start, stop)
        check_values(x, y, f"{self.path} samples [{start}, {stop})")
        return decode_onehot(x), y.astype(np.float32)

    def close(self) -> None:
        if self._arrays is not None and self._arrays[0] is not None and self._pid == os.getpid():
            self._arrays[0].close()
        self._arrays = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self.layout.format == "hdf5":
            state.update(_arrays=None, _pid=None)
        return state

    def __enter__(self) -> "DeepSEAFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def rc_pairs(num_samples: int, layout: str | None) -> np.ndarray:
    """``[P, 2]`` row indices (forward, reverse complement) of the pairs of a strand ``layout``.

    ``halves``: row ``i + N/2`` mirrors row ``i``; ``interleaved``: row ``2i + 1`` mirrors ``2i``;
    ``None``: no pairs.
    """
    half = num_samples // 2
    if layout == "halves":
        return np.stack([np.arange(half), np.arange(half) + half], axis=1)
    if layout == "interleaved":
        return np.stack([np.arange(0, 2 * half, 2), np.arange(1, 2 * half, 2)], axis=1)
    if layout is None:
        return np.zeros((0, 2), dtype=np.int64)
    raise InputError(f"unknown strand layout {layout!r}; use one of {RC_LAYOUTS}, 'auto' or 'none'.")


def _is_mirrored(file: DeepSEAFile, first: tuple[int, int], second: tuple[int, int]) -> bool:
    x1, y1 = file.read(*first)
    x2, y2 = file.read(*second)
    return bool(np.array_equal(x1, x2[:, ::-1, ::-1]) and np.array_equal(y1, y2))


def detect_rc_layout(file: DeepSEAFile, probes: int = 8, probe_size: int = 64) -> str | None:
    """Which strand layout the file's rows follow, checked on the data: ``halves``, ``interleaved``
    or ``None``.

    A layout is accepted when, in ``probes`` blocks of ``probe_size`` pairs spread evenly over the
    file, every pair's second window is the first with its position and base axes reversed and
    both carry the same labels. ``probes=None`` checks every pair.
    """
    n = len(file)
    if n < 2 or n % 2:
        return None
    half = n // 2
    size = half if probes is None else min(probe_size, half)
    count = 1 if probes is None else probes
    starts = sorted({int(s) for s in np.linspace(0, half - size, num=count)})
    if all(_is_mirrored(file, (s, s + size), (half + s, half + s + size)) for s in starts):
        return "halves"
    # Interleaved pairs: rows (2k, 2k+1) of a block of 2 * size rows.
    for s in starts:
        x, y = file.read(2 * s, 2 * (s + size))
        if not (np.array_equal(x[0::2], x[1::2, ::-1, ::-1]) and np.array_equal(y[0::2], y[1::2])):
            return None
    return "interleaved"
