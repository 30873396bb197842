"""The files ``python -m bigbird_dna.explain`` writes, each atomically: the per-base track, the
TF-MoDISco attribution file and the figures (see the CLI's docstring). Coordinates are 0-based,
half-open."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bigbird_dna.errors import InputError
from bigbird_dna.explain.figure import MAX_FIGURE_BP, draw_region
from bigbird_dna.explain.regions import (
    ExplainedRegion,
    ExplainRequest,
    hypothetical,
    region_attributions,
    write_attribution_track,
)
from bigbird_dna.genome.bed import read_stranded_bed
from bigbird_dna.genome.regions import check_region, merge_regions, parse_region, tile_region
from bigbird_dna.inference.tracks import TrackFile
from bigbird_dna.runtime.atomic import atomic_directory, atomic_paths
from bigbird_dna.runtime.heartbeat import Heartbeat

Region = tuple[str, int, int, str]  # record, start, end (0-based, half-open), strand


def read_regions(texts: list[str], bed: str | None, lengths: dict[str, int]) -> list[Region]:
    """``--region`` strings (``+`` strand), then ``--bed`` intervals (their column 6, else ``+``), in
    the order given; with neither, every record whole."""
    regions = [(*parse_region(text, lengths), "+") for text in texts]
    if bed:
        intervals, strands = read_stranded_bed(bed)
        regions += [(*check_region(r, lengths, f"{bed} ({r.record}:{r.start}-{r.end})"), strand or "+")
                    for r, strand in zip(intervals, strands)]
    return regions or [(record, 0, length, "+") for record, length in lengths.items()]


def write_track(model, genome, regions: list[Region], window: int, request: ExplainRequest, out: str, fmt: str,
                description: str, progress: bool) -> Path:
    """The per-base track over the merged regions (forward strand), streamed window by window."""
    from bigbird_dna.genome.bed import Region as Interval

    lengths = genome.record_lengths
    merged = merge_regions([Interval(record, start, end) for record, start, end, _ in regions])
    tiles = [tile for region in merged for tile in tile_region(region, lengths[region.record], window)]
    sizes = {record: lengths[record] for record in sorted(lengths)}
    with atomic_paths([out]) as (temporary,), TrackFile(temporary, fmt, sizes, description, Path(out).name) as track, \
            Heartbeat("explaining windows", len(tiles), "window", enabled=progress) as beat:
        write_attribution_track(model, genome, tiles, request, track, beat.update)
    return Path(out)


def check_whole_regions(regions: list[Region], window: int, h5: bool, figures: bool) -> None:
    """Refuse regions that ``--h5`` and ``--png-dir`` cannot explain as one model input, and for
    ``--h5`` regions of more than one length."""
    lengths = sorted({end - start for _, start, end, _ in regions})
    if h5 and len(lengths) > 1:
        raise InputError(f"--h5 needs regions of one length (TF-MoDISco reads [N, 4, L]); they have lengths "
                         f"{', '.join(map(str, lengths[:5]))}. Give intervals of one length, e.g. windows centred on "
                         "each peak.")
    for record, start, end, _ in regions:
        if end - start > window:
            raise InputError(f"region {record}:{start}-{end} ({end - start} bp) is longer than the window of "
                             f"{window} bp that --h5 and --png-dir explain as one model input; give shorter "
                             "intervals (e.g. centred windows) or a larger --window.")
        if figures and end - start > MAX_FIGURE_BP:
            raise InputError(f"region {record}:{start}-{end} ({end - start} bp): --png-dir draws regions of at most "
                             f"{MAX_FIGURE_BP:,} bp; give shorter intervals.")


def explain_regions(model, genome, regions: list[Region], request: ExplainRequest, figures: bool,
                    progress: bool) -> list[ExplainedRegion]:
    """Every region explained as one model input (for ``--h5`` and ``--png-dir``), with the ISM
    deltas too when ``figures``."""
    with Heartbeat("explaining regions", len(regions), "region", enabled=progress) as beat:
        return region_attributions(model, genome, regions, request, figures, beat.update)


def write_h5(path: str, explained: list[ExplainedRegion], request: ExplainRequest, target: str, model: str) -> Path:
    """The TF-MoDISco file (:mod:`bigbird_dna.motifs.attributions`): regions of one length only."""
    from bigbird_dna.motifs.attributions import Attributions, write_attributions

    sequences = np.stack([np.array([[b == c for b in r.seq.upper()] for c in "ACGT"], dtype=np.float32)
                          for r in explained])
    attributions = np.stack([hypothetical(r, request.method) for r in explained])
    return write_attributions(path, Attributions(sequences, np.nan_to_num(attributions), [r.name for r in explained],
                                                 method=request.method, target=target, model=model))


def write_figures(folder: str, explained: list[ExplainedRegion], request: ExplainRequest, target: str) -> Path:
    """One PNG per region: the attribution logo above the ISM heatmap (ISM is computed when the
    method is a gradient one)."""
    with atomic_directory(folder) as staging:
        for index, region in enumerate(explained):
            title = (f"{region.record}:{region.start:,}-{region.end:,} ({region.strand} strand, 0-based half-open) | "
                     f"{target} {request.output} {region.score:.3f} | {request.method}")
            draw_region(staging / f"{index:04d}_{region.record}_{region.start}_{region.end}.png", region.seq,
                        region.per_base, region.ism, region.positions, title, f"{request.method}\n({request.output})",
                        f"ISM delta ({request.output})")
    return Path(folder)

