"""The attribution file: what ``python -m bigbird_dna.explain`` writes and
``python -m bigbird_dna.motifs learn`` reads. HDF5, with:

- ``sequences``: float32 ``[N, 4, L]``, one-hot, rows A, C, G, T (an all-zero column is an N);
- ``attributions``: float32 ``[N, 4, L]``, *hypothetical* contributions: at each position, what each
  of the four bases would contribute (the actual contribution is the product with ``sequences``);
- ``names`` (optional): ``[N]`` strings, one per sequence (e.g. ``chr1:100-300(+)``);
- attributes ``method`` (e.g. ``ism``, ``grad_x_input``, ``integrated_gradients``), ``target`` (the
  output or class explained) and ``model`` (the export's path or name).

All sequences have one length ``L``; positions are 0-based along each sequence as given.
:func:`write_attributions` and :func:`read_attributions` are the one definition of the layout.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.motifs.modisco import check_inputs
from bigbird_dna.runtime.atomic import atomic_paths

ATTRIBUTES = ("method", "target", "model")


@dataclass(eq=False)
class Attributions:
    """The arrays and attributes of an attribution file (see the module docstring)."""

    sequences: np.ndarray  # [N, 4, L] float32 one-hot
    attributions: np.ndarray  # [N, 4, L] float32 hypothetical contributions
    names: list[str] | None = None
    method: str = ""
    target: str = ""
    model: str = ""


def write_attributions(path: str | os.PathLike, data: Attributions) -> Path:
    """Write ``data`` to ``path`` atomically (a temporary file in the same folder, then a rename)."""
    check_inputs(data.sequences, data.attributions, str(path))
    with atomic_paths([path]) as (tmp,), h5py.File(tmp, "w") as out:
        out.create_dataset("sequences", data=data.sequences.astype(np.float32), compression="gzip")
        out.create_dataset("attributions", data=data.attributions.astype(np.float32), compression="gzip")
        if data.names is not None:
            out.create_dataset("names", data=np.array(data.names, dtype=object), dtype=h5py.string_dtype())
        for key in ATTRIBUTES:
            out.attrs[key] = getattr(data, key)
    return Path(path)


def _text(value) -> str:
    """An HDF5 attribute as text: h5py gives bytes for fixed-length strings, str for variable-length ones."""
    return value.decode() if isinstance(value, bytes) else str(value)


def read_attributions(path: str | os.PathLike) -> Attributions:
    """The contents of an attribution file.

    Raises:
        InputError: a missing or unreadable file, or datasets that break the layout (the message
            names the expected shapes).
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise InputError(f"attribution file not found: {path}. Write one with python -m bigbird_dna.explain.")
    try:
        with h5py.File(path, "r") as h5:
            missing = [key for key in ("sequences", "attributions") if not isinstance(h5.get(key), h5py.Dataset)]
            if missing:
                raise InputError(f"{path} has no dataset(s) {missing} (it holds {sorted(h5)}); expected sequences "
                                 "[N, 4, L] one-hot and attributions [N, 4, L] hypothetical contributions, float32.")
            sequences = np.asarray(h5["sequences"][()], dtype=np.float32)
            attributions = np.asarray(h5["attributions"][()], dtype=np.float32)
            if "names" in h5 and h5["names"].dtype.kind not in "OSU":
                raise InputError(f"{path}: names holds {h5['names'].dtype} values; expected strings [N].")
            names = [str(n) for n in h5["names"].asstr()[()]] if "names" in h5 else None
            attrs = {key: _text(h5.attrs.get(key, "")) for key in ATTRIBUTES}
    except OSError as err:
        raise InputError(f"cannot read {path} as HDF5 ({err}); expected the file python -m bigbird_dna.explain "
                         "writes.") from err
    check_inputs(sequences, attributions, str(path))
    if names is not None and len(names) != len(sequences):
        raise InputError(f"{path}: names has {len(names)} entries for {len(sequences)} sequences.")
    return Attributions(sequences, attributions, names, **attrs)
