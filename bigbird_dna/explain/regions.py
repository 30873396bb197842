"""What ``explain`` computes for its three outputs, given a classifier and a genome.

- :func:`write_attribution_track`: a per-base track over regions, streamed. Each region is tiled
  by model windows (:func:`~bigbird_dna.genome.regions.tile_region`: half-window stride, each base
  taken from the window where it is most central), the windows are explained in batches and each
  window's own bases go straight into the track, so memory does not grow with the regions' length.
  ISM mutates only a window's own bases.
- :func:`region_attributions`: each requested region as one model input, per letter, for the
  TF-MoDISco file and the figures.

Coordinates are 0-based and half-open; a region read on the ``-`` strand is the reverse
complement of its forward bases, and its arrays run along that strand.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch

from bigbird_dna.attribution.bases import one_hot
from bigbird_dna.genome.regions import Tile
from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.inference.batching import chunked
from bigbird_dna.inference.tracks import TrackFile


@dataclass(frozen=True)
class ExplainRequest:
    """The attribution settings of one run (see ``BigBirdDNA.attribute``)."""

    method: str
    target: str | int | None
    output: str
    strands: str
    steps: int | None
    batch_size: int

    def attribute(self, model, seqs: list[str], per_letter: bool = False, span=None,
                  method: str | None = None) -> torch.Tensor:
        return model.attribute(seqs, method=method or self.method, target=self.target, output=self.output,
                               per_letter=per_letter, strands=self.strands, span=span, steps=self.steps,
                               batch_size=self.batch_size, progress=False)


@dataclass(frozen=True)
class ExplainedRegion:
    """One region explained as a single model input: ``letters [L, 4]`` and ``per_base [L]`` along
    ``strand``, and the model's score of it (the target's ``output`` scale)."""

    record: str
    start: int
    end: int
    strand: str
    seq: str
    letters: np.ndarray
    per_base: np.ndarray
    score: float
    ism: np.ndarray | None = None  # [L, 4] ISM deltas, for the figures

    @property
    def name(self) -> str:
        return f"{self.record}:{self.start}-{self.end}({self.strand})"

    @property
    def positions(self) -> np.ndarray:
        """``[L]``: the genome coordinate (0-based) of each base along :attr:`strand`."""
        forward = np.arange(self.start, self.end)
        return forward[::-1] if self.strand == "-" else forward


def write_attribution_track(model, genome, tiles: list[Tile], request: ExplainRequest, track: TrackFile,
                            tick: Callable[[int], None]) -> None:
    """Explain ``tiles`` (in contig then start order) and write their own bases into ``track``."""
    chunk_size = 1 if request.method == "ism" else request.batch_size
    for chunk in chunked(tiles, chunk_size):
        seqs = [genome.fetch(t.record, t.start, t.end) for t in chunk]
        span = None
        if request.method == "ism":
            span = (chunk[0].own_start - chunk[0].start, chunk[0].own_end - chunk[0].start)
        values = request.attribute(model, seqs, span=span)
        for tile, row in zip(chunk, values):
            own = row[tile.own_start - tile.start:tile.own_end - tile.start]
            track.add_bases(tile.record, tile.own_start, own.tolist())
        tick(len(chunk))


def region_attributions(model, genome, regions: list[tuple[str, int, int, str]], request: ExplainRequest,
                        with_ism: bool, tick: Callable[[int], None]) -> list[ExplainedRegion]:
    """Each ``(record, start, end, strand)`` explained whole: per-letter attributions and score,
    and with ``with_ism`` the ISM deltas too (the method's own when it is ISM)."""
    out = []
    for chunk in chunked(regions, request.batch_size):
        seqs = [_read(genome, *region) for region in chunk]
        letters = request.attribute(model, seqs, per_letter=True).numpy()
        per_base = request.attribute(model, seqs).numpy() if request.method == "ism" else \
            [(row[:len(seq)] * one_hot(seq).numpy()).sum(-1) for row, seq in zip(letters, seqs)]
        scores = _scores(model, seqs, request)
        ism = [None] * len(seqs)
        if with_ism:
            ism = letters if request.method == "ism" else \
                request.attribute(model, seqs, per_letter=True, method="ism").numpy()
        for (record, start, end, strand), seq, row, base, score, deltas in zip(chunk, seqs, letters, per_base, scores,
                                                                               ism):
            out.append(ExplainedRegion(record, start, end, strand, seq, row[:len(seq)], base[:len(seq)], score,
                                       None if deltas is None else deltas[:len(seq)]))
        tick(len(chunk))
    return out


def _read(genome, record: str, start: int, end: int, strand: str) -> str:
    seq = genome.fetch(record, start, end)
    return reverse_complement(seq) if strand == "-" else seq


def _scores(model, seqs: list[str], request: ExplainRequest) -> list[float]:
    """The target's value for each sequence on ``request.output``'s scale, strands as explained."""
    from bigbird_dna.attribution.targets import resolve_target

    target = resolve_target(model.output, request.target, request.output)
    strands = ("+", "-") if request.strands == "both" else ("+",)
    values = []
    for seq in seqs:
        ids = [model.encode([seq if s == "+" else reverse_complement(seq)])[0] for s in strands]
        with torch.no_grad():
            logits = torch.cat([model.module.logits(i.to(model.device), None) for i in ids]).float()
        values.append(float(target.of(logits, model.output).mean()))
    return values


def hypothetical(region: ExplainedRegion, method: str) -> np.ndarray:
    """``[4, L]`` hypothetical contributions for TF-MoDISco: gradient methods' per-letter values;
    ISM's deltas centred on their mean over the four letters."""
    letters = region.letters
    if method == "ism":
        letters = letters - letters.mean(axis=1, keepdims=True)
    return letters.T.astype(np.float32)
