"""Evaluation windows that tile the held-out regions with a fixed stride.

Validation and test score the whole held-out region, not a random sample of it: region ``r`` is cut
into windows starting at ``r.start, r.start + stride, ...`` (0-based, half-open, forward strand).
With ``stride == window_bp`` (the default) every base lies in exactly one window; the last window
of a region is shorter when the region does not divide evenly (tails under ``min_bp`` are
dropped). For very large genomes ``max_windows`` caps the count: evenly spaced tiles are kept, so
the sample still spans every region in proportion to its length.

Windows are dealt to ranks and then to DataLoader workers by index
(:meth:`~bigbird_dna.runtime.shards.Shard.indices`), like
:class:`~bigbird_dna.genome.windows.GenomeWindows`; each is ``{"seq", "record", "start", "end",
"strand": "+", "index"}``, its bases upper-case. Windows made only of N/IUPAC codes are skipped.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
from torch.utils.data import IterableDataset

from bigbird_dna.errors import InputError
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction
from bigbird_dna.genome.splits import Region
from bigbird_dna.runtime.shards import current_shard


def tile_regions(regions: Sequence[Region], window_bp: int, stride_bp: int | None = None,
                 max_windows: int | None = None, min_bp: int = 64) -> list[tuple[str, int, int]]:
    """``(record, start, end)`` tiles of ``regions``, in region order; see the module docstring."""
    stride = stride_bp or window_bp
    if window_bp < 1 or stride < 1:
        raise InputError(f"window_bp={window_bp} and the eval stride={stride} must be positive "
                         "(data.window_bp, data.eval_stride_bp).")
    tiles = []
    for region in regions:
        for start in range(region.start, region.end, stride):
            end = min(start + window_bp, region.end)
            if end - start >= min(min_bp, window_bp):
                tiles.append((region.record, start, end))
            if end == region.end:
                break
    if max_windows is not None and len(tiles) > max_windows:
        keep = np.linspace(0, len(tiles) - 1, max_windows).round().astype(int)
        tiles = [tiles[i] for i in np.unique(keep)]
    return tiles


class TiledWindows(IterableDataset):
    """The tiles of :func:`tile_regions` read from ``genome``, sharded over ranks and workers.

    Args:
        genome: the genome (each process opens its own handle).
        regions: the held-out regions (0-based, half-open).
        window_bp, stride_bp, max_windows: see :func:`tile_regions`.
    """

    def __init__(self, genome: GenomeReader, regions: Sequence[Region], window_bp: int,
                 stride_bp: int | None = None, max_windows: int | None = None):
        super().__init__()
        self.genome = genome
        self.tiles = tile_regions(regions, window_bp, stride_bp, max_windows)
        self.epoch = 0  # fixed windows: no epochs, kept for the loaders' bookkeeping

    def __len__(self) -> int:
        return len(self.tiles)

    def __iter__(self) -> Iterator[dict]:
        for index in current_shard().indices(len(self.tiles)):
            item = self.read(index)
            if item is not None:
                yield item

    def read(self, index: int) -> dict | None:
        """Window ``index``, or None when it holds no A/C/G/T at all."""
        record, start, end = self.tiles[index]
        seq = self.genome.fetch(record, start, end)
        if ambiguous_fraction(seq) >= 1.0:
            return None
        return {"seq": seq, "record": record, "start": start, "end": end, "strand": "+", "index": index}

    def iter_all(self) -> Iterator[dict]:
        """Every window in order, in this process (for the baselines, computed once on one rank)."""
        for index in range(len(self.tiles)):
            item = self.read(index)
            if item is not None:
                yield item
