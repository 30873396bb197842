"""Writing variant scores: ``PREFIX.tsv`` (one row per ALT allele) and, for many-label classifiers,
``PREFIX.h5`` with every label; both appear under their names only when everything is written."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import torch

from bigbird_dna.model.outputs import MASKED_LM
from bigbird_dna.pretrained import BigBirdDNA
from bigbird_dna.runtime.atomic import atomic_paths
from bigbird_dna.variants.score import classifier_scores, cosine_distance, mlm_llr
from bigbird_dna.variants.windows import VariantWindows


class VariantWriter:
    """Score chunks of :class:`VariantWindows` with ``model`` and append their rows; a context manager."""

    def __init__(self, prefix: str | Path, model: BigBirdDNA, settings: dict[str, Any]):
        self.model = model
        self.labels = model.num_labels
        self.mlm = model.output.kind is MASKED_LM
        self.paths = [Path(f"{prefix}.tsv")] + ([Path(f"{prefix}.h5")] if self.labels > 1 else [])
        self.settings = settings
        self.rows = 0
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "VariantWriter":
        temporary = self._stack.enter_context(atomic_paths(self.paths))
        self._tsv = self._stack.enter_context(open(temporary[0], "w"))
        columns = ["chrom", "pos", "id", "ref", "alt", "ref_match"]
        columns += ["ref_score", "alt_score", "delta"] if self.labels == 1 else ["max_abs_delta"] if self.labels else []
        columns += ["cos_dist"] + (["llr"] if self.mlm else [])
        self._tsv.write("# bigbird_dna variants " + " ".join(f"{k}={v}" for k, v in self.settings.items()) + "\n")
        self._tsv.write("\t".join(columns) + "\n")
        self._h5 = None
        if self.labels > 1:
            import h5py

            self._h5 = self._stack.enter_context(h5py.File(temporary[1], "w"))
            text, n = h5py.string_dtype(), self.labels
            for name in ("ref", "alt", "delta"):
                self._h5.create_dataset(name, (0, n), maxshape=(None, n), dtype="float32", chunks=(256, n))
            for name, dtype in (("chrom", text), ("pos", "int64"), ("id", text), ("ref_allele", text),
                                ("alt_allele", text)):
                self._h5.create_dataset(name, (0,), maxshape=(None,), dtype=dtype)
            self._h5.create_dataset("label_names", data=list(self.model.output.names), dtype=text)
            self._h5.attrs.update({k: str(v) for k, v in self.settings.items()})
            self._h5.attrs["coordinates"] = "pos 1-based as in VCF; delta = alt - ref"
        return self

    def __exit__(self, *exc) -> None:
        self._stack.__exit__(*exc)

    def write(self, chunk: list[VariantWindows], batch_size: int) -> None:
        """Score ``chunk`` and append its rows."""
        columns: list[torch.Tensor] = []
        if self.labels:
            ref, alt = classifier_scores(self.model, chunk, batch_size)
            delta = alt - ref
            columns += [ref[:, 0], alt[:, 0], delta[:, 0]] if self.labels == 1 else [delta.abs().amax(1)]
            if self._h5 is not None:
                self._append_h5(chunk, ref, alt, delta)
        columns.append(cosine_distance(self.model, chunk, batch_size))
        if self.mlm:
            columns.append(mlm_llr(self.model, chunk, batch_size))
        values = torch.stack(columns, 1).tolist()
        for w, row in zip(chunk, values):
            v = w.variant
            self._tsv.write("\t".join([v.chrom, str(v.pos), v.id, v.ref, v.alt, str(int(w.ref_matches)),
                                       *(f"{x:.6g}" for x in row)]) + "\n")
        self.rows += len(chunk)

    def _append_h5(self, chunk: list[VariantWindows], ref: torch.Tensor, alt: torch.Tensor,
                   delta: torch.Tensor) -> None:
        n, total = len(chunk), self._h5["ref"].shape[0] + len(chunk)
        values = {"ref": ref.numpy(), "alt": alt.numpy(), "delta": delta.numpy(),
                  "chrom": [w.variant.chrom for w in chunk], "pos": [w.variant.pos for w in chunk],
                  "id": [w.variant.id for w in chunk], "ref_allele": [w.variant.ref for w in chunk],
                  "alt_allele": [w.variant.alt for w in chunk]}
        for name, data in values.items():
            self._h5[name].resize(total, axis=0)
            self._h5[name][total - n:] = data
