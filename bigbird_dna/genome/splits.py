"""Train / validation / test regions of a genome, and the manifest that records them.

Coordinates are 0-based and half-open (BED convention): ``Region("chr1", 0, 100)`` is the first
100 bases of ``chr1``.

Two ways to split, chosen by the configuration rather than by code:

- **Chromosome holdout** (any of ``val``/``test`` given): the named records form the validation and
  test splits; training uses ``train`` if given, else every other record.
- **Fraction holdout** (``val`` and ``test`` both empty), for genomes with one or a few records such
  as a bacterial chromosome: every record keeps its first ``1 - 2f`` for training and holds out a
  fraction ``f`` at its END for validation, then another ``f`` for test::

      train [0, L(1-2f))   val [L(1-2f), L(1-f))   test [L(1-f), L)

  Splitting at fixed positions (not at random windows) keeps training windows from overlapping
  held-out bases.
- **Record-fraction holdout** (``holdout_records`` set), for many short records (upstream regions,
  contigs, one gene per record) whose held-out ends would be shorter than a window: a seeded
  ``holdout_records`` share of the records (at least one) is held out whole for validation, another
  for test; every other record trains.

Regions shorter than one window cannot hold a sample and are dropped, with a warning per split
that counts them and their bases; a split left with nothing is an :class:`InputError` that names
the split and the fix. Resolving is the ``splits`` phase (:mod:`bigbird_dna.runtime.phases`), whose
log line gives each split's regions and bases.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
from pathlib import Path
from typing import Any

from bigbird_dna.errors import InputError
from bigbird_dna.genome.bed import Region
from bigbird_dna.runtime.atomic import write_text_atomic
from bigbird_dna.runtime.phases import counted, human_size, phase

log = logging.getLogger(__name__)

SPLITS = ("train", "val", "test")
__all__ = ["SPLITS", "Region", "resolve_splits", "write_split_manifest"]


def _known(names: list[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" ... ({len(names)} records)" if len(names) > limit else "")


def _check_names(record_lengths: dict[str, int], lists: dict[str, list[str]]) -> None:
    owner: dict[str, str] = {}
    for split, names in lists.items():
        for name in names:
            if name not in record_lengths:
                raise InputError(f"record {name!r} in the {split} split list is not in the genome. "
                                 f"Known records: {_known(list(record_lengths))}.")
            if owner.setdefault(name, split) != split:
                raise InputError(f"record {name!r} is in both the {owner[name]} and the {split} split "
                                 "lists. Put each record in one split only.")


def _by_record_lists(record_lengths: dict[str, int], train: list[str] | None, val: list[str],
                     test: list[str]) -> dict[str, list[Region]]:
    held_out = set(val) | set(test)
    if train is None:
        train = [name for name in record_lengths if name not in held_out]
    _check_names(record_lengths, {"train": train, "val": val, "test": test})
    return {split: [Region(name, 0, record_lengths[name]) for name in names]
            for split, names in zip(SPLITS, (train, val, test))}


def _by_fraction(record_lengths: dict[str, int], train: list[str] | None,
                 holdout_fraction: float) -> dict[str, list[Region]]:
    if not 0.0 < holdout_fraction < 0.5:
        raise InputError(f"holdout_fraction={holdout_fraction} must lie in (0, 0.5): with no val/test "
                         "record lists, each record holds out that fraction at its end for val and "
                         "another for test. Set data.holdout_fraction (e.g. 0.05) or give record lists.")
    names = list(record_lengths) if train is None else train
    _check_names(record_lengths, {"train": names})
    splits: dict[str, list[Region]] = {split: [] for split in SPLITS}
    for name in names:
        length = record_lengths[name]
        cut_val = math.floor(length * (1 - 2 * holdout_fraction))
        cut_test = math.floor(length * (1 - holdout_fraction))
        splits["train"].append(Region(name, 0, cut_val))
        splits["val"].append(Region(name, cut_val, cut_test))
        splits["test"].append(Region(name, cut_test, length))
    return splits


def _by_record_fraction(record_lengths: dict[str, int], train: list[str] | None, fraction: float,
                        seed: int) -> dict[str, list[Region]]:
    names = list(record_lengths) if train is None else train
    _check_names(record_lengths, {"train": names})
    if not 0.0 < fraction < 0.5:
        raise InputError(f"holdout_records={fraction} must lie in (0, 0.5): the share of records held out "
                         "whole for val, and another for test. Set data.holdout_records (e.g. 0.05).")
    if len(names) < 3:
        raise InputError(f"holdout_records needs at least 3 records (one each for train, val and test); the "
                         f"genome has {len(names)}. Use data.holdout_fraction instead (the end of each record).")
    held = max(1, round(fraction * len(names)))
    if 2 * held >= len(names):
        held = (len(names) - 1) // 2
    shuffled = random.Random(seed).sample(names, len(names))
    val, test = set(shuffled[:held]), set(shuffled[held:2 * held])
    split_of = {name: "val" if name in val else "test" if name in test else "train" for name in names}
    return {split: [Region(name, 0, record_lengths[name]) for name in names if split_of[name] == split]
            for split in SPLITS}


def resolve_splits(record_lengths: dict[str, int], train: list[str] | None, val: list[str],
                   test: list[str], holdout_fraction: float, min_length: int,
                   holdout_records: float | None = None, seed: int = 0) -> dict[str, list[Region]]:
    """Turn split settings into regions (0-based, half-open) for ``"train"``, ``"val"``, ``"test"``.

    Args:
        record_lengths: record name to length in bp, e.g. ``Genome.record_lengths``.
        train: records to train on; ``None`` means every record not in ``val`` or ``test``.
        val: records held out for validation (chromosome holdout).
        test: records held out for test (chromosome holdout).
        holdout_fraction: used only when ``val`` and ``test`` are both empty: each record (of
            ``train`` if given, else all) gives the last ``2 * holdout_fraction`` of its length to
            val then test, as in the module docstring.
        min_length: shortest useful region, one window (``data.window_bp``); shorter ones are dropped.
        holdout_records: hold out whole records instead: this seeded share of the records (of
            ``train`` if given, else all) for val and another for test; not with ``val``/``test``.
        seed: the seed of that draw (the run seed, so a resumed run gets the same records).

    Returns:
        ``{"train": [...], "val": [...], "test": [...]}``, each a non-empty list of regions.

    Raises:
        InputError: an unknown record name, a record in two splits, a bad ``holdout_fraction`` or
            ``holdout_records``, both record lists and ``holdout_records``, or a split with no region
            at least ``min_length`` long.
    """
    with phase("splits") as timing:
        if holdout_records is not None and (val or test):
            raise InputError("data.holdout_records holds out records by chance; data.val_records and "
                             "data.test_records name them. Give one or the other.")
        if holdout_records is not None:
            splits = _by_record_fraction(record_lengths, train, holdout_records, seed)
        elif val or test:
            splits = _by_record_lists(record_lengths, train, list(val), list(test))
        else:
            splits = _by_fraction(record_lengths, train, holdout_fraction)
        by_fraction = holdout_records is None and not (val or test)
        for split, regions in splits.items():
            kept = [region for region in regions if region.length >= min_length]
            if not kept:
                raise InputError(_empty_split_message(split, regions, min_length, by_fraction))
            if len(kept) < len(regions):
                log.warning(_dropped_message(split, regions, min_length, by_fraction))
            splits[split] = kept
        timing.detail = ", ".join(f"{split} {_total(regions)} in {counted(len(regions), 'region')}"
                                  for split, regions in splits.items())
    return splits


def _total(regions: list[Region]) -> str:
    return human_size(sum(region.length for region in regions), "bp")


_WHOLE_RECORDS = ("hold out whole records instead (data.holdout_records=0.05: a seeded 5% of the records "
                  "for val, another 5% for test)")


def _dropped_message(split: str, regions: list[Region], min_length: int, by_fraction: bool) -> str:
    dropped = [region for region in regions if region.length < min_length]
    fix = "Lower data.window_bp to keep them" + (f", or {_WHOLE_RECORDS}" if by_fraction and split != "train" else "")
    return (f"dropped {len(dropped):,} of {len(regions):,} {split} regions shorter than one window "
            f"({min_length:,} bp): {_total(dropped)} not used. {fix}.")


def _empty_split_message(split: str, regions: list[Region], min_length: int, by_fraction: bool) -> str:
    if not regions:
        return (f"the {split} split has no records. Give data.val_records and data.test_records "
                "together (chromosome holdout), or leave both empty to hold out the end of each record.")
    longest = max(regions, key=lambda region: region.length)
    if by_fraction:
        fix = f"Lower data.window_bp, or {_WHOLE_RECORDS}."
    else:
        fix = "Lower data.window_bp, or change the split record lists (or data.holdout_records)."
    return (f"the {split} split has no region as long as one window ({min_length} bp): its longest, "
            f"{longest.record}:{longest.start}-{longest.end}, is {longest.length} bp. {fix}")


def write_split_manifest(path: str | os.PathLike, splits: dict[str, list[Region]],
                         fasta: str | os.PathLike, extra: dict[str, Any]) -> Path:
    """Write the realised split as JSON, atomically (a temporary file, then ``os.replace``).

    The manifest holds the FASTA path, each split's regions (0-based, half-open), region counts and
    bp totals, plus ``extra`` (e.g. ``window_bp``, ``seed``) at the top level.

    Returns:
        The manifest path.
    """
    path = Path(path)
    manifest: dict[str, Any] = {"fasta": str(fasta), "coordinates": "0-based, half-open (BED)"}
    clash = extra.keys() & {*manifest, "splits"}
    if clash:
        raise ValueError(f"extra manifest keys {sorted(clash)} clash with the manifest's own keys")
    manifest.update(extra)
    manifest["splits"] = {
        split: {
            "num_regions": len(regions),
            "total_bp": sum(region.length for region in regions),
            "regions": [{"record": r.record, "start": r.start, "end": r.end} for r in regions],
        }
        for split, regions in splits.items()
    }
    return write_text_atomic(path, json.dumps(manifest, indent=2) + "\n")
