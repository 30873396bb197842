"""The regions a per-base track covers, and the model windows that tile them.

**Regions.** ``--region`` strings follow samtools: ``chr:start-end`` is 1-based and inclusive
(``chr1:1-100`` is the first 100 bases; commas allowed), a bare ``chr`` is the whole contig. BED
files are 0-based and half-open. Everything here is 0-based, half-open :class:`Region`.

**Windows.** A region ``[s, e)`` is widened by ``W // 4`` on each side (within the contig) and cut
into windows of ``W`` bases at a stride of ``W // 2``, the last one aligned to the widened end. Each
base takes its score from the window whose centre is nearest (the window where it is most central),
so every scored base has at least ``W // 4`` bases of context on each side, except within ``W // 4``
of a contig end. A widened region of at most ``W`` bases is one window.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region

_REGION = re.compile(r"^(?P<record>.+?)(?::(?P<start>[\d,]+)-(?P<end>[\d,]+))?$")


class Tile(NamedTuple):
    """A model window ``[start, end)`` and the bases ``[own_start, own_end)`` it scores (0-based)."""

    record: str
    start: int
    end: int
    own_start: int
    own_end: int


def parse_region(text: str, lengths: dict[str, int]) -> Region:
    """``chr:start-end`` (1-based, inclusive) or ``chr`` as a 0-based half-open :class:`Region`.

    Raises:
        InputError: a malformed string, a contig not in ``lengths``, or an interval past its end.
    """
    match = _REGION.match(text.strip())
    if match is None or (match["record"] not in lengths and ":" in match["record"]):
        raise InputError(f"--region {text!r}: write chr:start-end (1-based, inclusive, as samtools) or chr.")
    record = match["record"]
    if record not in lengths:
        raise InputError(f"--region {text!r}: contig {record!r} is not in the genome (known: "
                         f"{', '.join(list(lengths)[:10])}).")
    if match["start"] is None:
        return Region(record, 0, lengths[record])
    start, end = (int(match[k].replace(",", "")) for k in ("start", "end"))
    if not 1 <= start <= end:
        raise InputError(f"--region {text!r}: need 1 <= start <= end (1-based, inclusive).")
    return check_region(Region(record, start - 1, end), lengths, f"--region {text!r}")


def check_region(region: Region, lengths: dict[str, int], where: str) -> Region:
    """``region`` if its contig is in ``lengths`` and it ends within it, else an :class:`InputError`."""
    length = lengths.get(region.record)
    if length is None:
        raise InputError(f"{where}: contig {region.record!r} is not in the genome (known: "
                         f"{', '.join(list(lengths)[:10])}).")
    if region.end > length:
        raise InputError(f"{where}: the interval ends at {region.end}, past the end of {region.record} "
                         f"({length} bp; BED is 0-based half-open, --region 1-based inclusive).")
    return region


def merge_regions(regions: list[Region]) -> list[Region]:
    """Sorted by contig name then start, overlapping or touching regions joined into one."""
    merged: list[Region] = []
    for region in sorted(regions):
        if merged and merged[-1].record == region.record and region.start <= merged[-1].end:
            merged[-1] = Region(region.record, merged[-1].start, max(merged[-1].end, region.end))
        else:
            merged.append(region)
    return merged


def tile_region(region: Region, contig_length: int, window: int) -> list[Tile]:
    """The windows of ``region`` and the bases each one scores (module docstring), in order."""
    low = max(0, region.start - window // 4)
    high = min(contig_length, region.end + window // 4)
    if high - low <= window:
        return [Tile(region.record, low, high, region.start, region.end)]
    starts = [*range(low, high - window, window // 2), high - window]
    # base x belongs to the window whose centre (start + window / 2) is nearest
    bounds = [region.start, *((a + b + window) // 2 for a, b in zip(starts, starts[1:])), region.end]
    tiles = []
    for start, own_start, own_end in zip(starts, bounds, bounds[1:]):
        own_start, own_end = max(own_start, region.start), min(own_end, region.end)
        if own_end > own_start:
            tiles.append(Tile(region.record, start, start + window, own_start, own_end))
    return tiles
