"""Fixed-length genome windows for pretraining, as a streaming ``IterableDataset``.

Coordinates are 0-based and half-open (BED convention); ``start``/``end`` are always on the forward
strand, also when ``strand`` is ``"-"`` and ``seq`` is the reverse complement.

**Sampling.** The valid window starts of all regions form one index space of size
``sum(region.length - window_bp + 1)``. A window start is drawn uniformly from it (so records are
weighted by length), the window is read, and it is rejected and redrawn if its
:func:`~bigbird_dna.genome.sequence.ambiguous_fraction` (N or other IUPAC codes) exceeds
``max_ambiguous_fraction``. The result is uniform over acceptable windows. Nothing is read at
construction: the setup costs O(number of regions), and each window costs one ``window_bp`` read
plus a C-speed base count per try. On hg38 (about 5% N, mostly long gaps) a window takes about
1.05 tries, so a 3 Gb genome costs the same per window as a phage. N is kept as N; soft-masked
bases come back upper-case, as every :class:`~bigbird_dna.genome.reader.GenomeReader` reads them.

**Randomness and sharding.** Every draw comes from a ``numpy.random.Generator(PCG64(SeedSequence))``,
never from global NumPy state, so forked DataLoader workers do not repeat each other:

- random mode (training): one stream per ``(seed, epoch, rank, worker)``. Call :meth:`set_epoch`
  every epoch: Lightning only calls ``set_epoch`` on samplers, not on iterable datasets. With
  ``persistent_workers=True`` the workers keep their own copy of the dataset and miss it.
- fixed mode (validation/test): window ``i`` is drawn from its own stream ``(seed, i)``, first inside
  its ``i``-th slice of the start space (stratified, so windows spread evenly and do not repeat),
  then anywhere if that slice is all N (such a fallback window can, rarely, coincide with another).
  The windows depend only on ``seed``, not on the epoch or on how many ranks and workers share
  them; there is no reverse-complement augmentation.

Window indices ``0..num_windows-1`` are dealt to ranks first, then to workers
(:meth:`~bigbird_dna.runtime.shards.Shard.indices`), so each epoch yields
``num_windows`` windows in all and ranks differ by at most one. ``__len__`` is
``num_windows // world_size``, which every rank reaches, so Lightning (which stops an epoch after
``len(dataloader)`` batches) runs the same number of steps on every rank. With several workers, each
emits its own partial last batch, and Lightning may leave those few windows unused. Pick
``num_windows`` divisible by ``world_size * num_workers * batch_size`` for exact epochs.

Each window carries ``index``, its position in the epoch's ``0..num_windows-1``: with the epoch and
the seed it names the window independently of how the epoch is sharded (training masks are seeded
from it).

**Resuming mid-epoch.** :meth:`resume_at` makes the next iteration skip the batches that a rank
already consumed this epoch, so a run restarted from a checkpoint sees exactly the windows that
the uninterrupted run would have seen next. Random draws cannot be jumped over (rejection
sampling consumes a variable amount of randomness), so the skipped windows are drawn again and
dropped; this costs one genome read per skipped window, no tokenization. With several DataLoader
workers the shards are rotated to continue the loader's round-robin where it stopped
(:func:`~bigbird_dna.runtime.shards.current_shard`). This is exact while the world size, worker
count and batch size stay the same, and while every worker emits whole batches (see above).

The genome's handle is opened lazily in each process that reads (each DataLoader worker), never in
``__init__`` and never shared across processes
(:class:`~bigbird_dna.genome.reader.GenomeReader`).
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np
from torch.utils.data import IterableDataset

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.reader import GenomeReader
from bigbird_dna.genome.sequence import ambiguous_fraction, reverse_complement
from bigbird_dna.runtime.shards import Shard, current_shard

MAX_TRIES = 1000  # draws per window before deciding the regions hold (almost) no valid window
STRATUM_TRIES = 16  # fixed mode: draws inside a window's own slice before searching everywhere


class GenomeWindows(IterableDataset):
    """Windows of ``window_bp`` bases from ``regions``, as ``{"seq", "record", "start", "end", "strand"}``.

    Args:
        genome: the genome (each process opens its own handle).
        regions: where windows may lie (0-based, half-open); regions shorter than a window are unused.
        window_bp: window length in bases.
        num_windows: windows per epoch, summed over all ranks and workers.
        seed: base seed of every random stream (a non-negative integer).
        max_ambiguous_fraction: windows with a larger fraction of N/IUPAC bases are redrawn.
        reverse_complement_prob: chance that a window is returned reverse-complemented (strand
            ``"-"``); random mode only.
        fixed: deterministic windows that depend only on ``seed`` (for validation/test).

    Raises:
        InputError: bad settings, or no region as long as a window.
    """

    def __init__(self, genome: GenomeReader, regions: Sequence[Region], window_bp: int,
                 num_windows: int, seed: int, max_ambiguous_fraction: float = 0.1,
                 reverse_complement_prob: float = 0.0, fixed: bool = False):
        super().__init__()
        if window_bp < 1 or num_windows < 0:
            raise InputError(f"window_bp={window_bp} must be positive and num_windows={num_windows} "
                             "non-negative. Fix data.window_bp, data.windows_per_epoch or "
                             "data.eval_windows.")
        if not 0.0 <= max_ambiguous_fraction <= 1.0 or not 0.0 <= reverse_complement_prob <= 1.0:
            raise InputError(f"max_ambiguous_fraction={max_ambiguous_fraction} and reverse_complement_prob="
                             f"{reverse_complement_prob} must lie in [0, 1]. Fix data.max_n_fraction or "
                             "data.reverse_complement_prob.")
        if fixed and reverse_complement_prob > 0:
            raise InputError("reverse-complement augmentation applies to random (training) windows "
                             "only: set reverse_complement_prob=0 for fixed validation/test windows.")
        self.genome = genome
        self.regions = [region for region in regions if region.length >= window_bp]
        if not self.regions:
            longest = max((region.length for region in regions), default=0)
            raise InputError(f"no region is as long as one window ({window_bp} bp); the longest is "
                             f"{longest} bp. Lower data.window_bp or use longer records.")
        self.window_bp = window_bp
        self.num_windows = num_windows
        self.seed = seed
        self.max_ambiguous_fraction = max_ambiguous_fraction
        self.reverse_complement_prob = reverse_complement_prob
        self.fixed = fixed
        self.epoch = 0
        self._resume_batches = 0
        self._resume_batch_size = 0
        starts = [region.length - window_bp + 1 for region in self.regions]
        self._offsets = np.concatenate([[0], np.cumsum(starts, dtype=np.int64)])  # [R + 1]

    def set_epoch(self, epoch: int) -> None:
        """Select the random stream of ``epoch`` (random mode; fixed windows ignore it)."""
        self.epoch = epoch

    def resume_at(self, batches: int, batch_size: int) -> None:
        """Make the next :meth:`__iter__` skip the first ``batches`` batches of ``batch_size`` windows
        that this rank's DataLoader yields in the current epoch; ``resume_at(0, 0)`` clears it.

        It applies to the next ``__iter__`` call only (which is when a DataLoader creates its
        iterator): the loader resets it right after.
        """
        if batches < 0 or (batches and batch_size < 1):
            raise ValueError(f"cannot resume at batch {batches} with batch size {batch_size}")
        self._resume_batches = batches
        self._resume_batch_size = batch_size

    def __len__(self) -> int:
        """Windows that every rank yields at least: ``num_windows // world_size``."""
        return self.num_windows // current_shard().world_size

    def __iter__(self) -> Iterator[dict]:
        return self.iter_shard(current_shard(self._resume_batches, self._resume_batch_size))

    def iter_shard(self, shard: Shard) -> Iterator[dict]:
        """The windows of one shard, without its first ``shard.skip`` windows; :meth:`__iter__`
        picks the calling process's shard."""
        indices = shard.indices(self.num_windows)
        if self.fixed:
            for index in indices[shard.skip:]:
                stream = np.random.SeedSequence(self.seed, spawn_key=(index,))
                yield {**self._draw(np.random.Generator(np.random.PCG64(stream)), stratum=index), "index": index}
        else:
            entropy = [self.seed, self.epoch, shard.rank, shard.worker]
            rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy)))
            for position, index in enumerate(indices):
                window = self._draw(rng, stratum=None)  # skipped windows are drawn too: same stream
                if position >= shard.skip:
                    yield {**window, "index": index}

    def _draw(self, rng: np.random.Generator, stratum: int | None) -> dict:
        total = int(self._offsets[-1])
        for attempt in range(MAX_TRIES):
            low, high = 0, total
            if stratum is not None and attempt < STRATUM_TRIES:
                low = stratum * total // self.num_windows
                high = max(low + 1, (stratum + 1) * total // self.num_windows)
            position = int(rng.integers(low, high))
            k = int(np.searchsorted(self._offsets, position, side="right")) - 1
            region = self.regions[k]
            start = region.start + position - int(self._offsets[k])
            seq = self.genome.fetch(region.record, start, start + self.window_bp)
            if ambiguous_fraction(seq) <= self.max_ambiguous_fraction:
                break
        else:
            raise InputError(f"found no {self.window_bp} bp window with at most "
                             f"{self.max_ambiguous_fraction:.0%} N/ambiguous bases in {MAX_TRIES} tries "
                             f"over {len(self.regions)} region(s) of {self.genome.path}, e.g. "
                             f"{region.record}:{region.start}-{region.end}: that sequence is (almost) all N. "
                             "Raise data.max_n_fraction, lower data.window_bp, or use records "
                             "with real sequence.")
        strand = "+"
        if self.reverse_complement_prob > 0 and rng.random() < self.reverse_complement_prob:
            seq, strand = reverse_complement(seq), "-"
        return {"seq": seq, "record": region.record, "start": start, "end": start + self.window_bp,
                "strand": strand}
