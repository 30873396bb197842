"""What a finished training run records about its model: ``metadata.training`` of the export, with
no absolute path (the data and tokenizer settings, the genome it read: name, size, records and split
sizes, from the run's ``split_manifest.json``; the steps, the final metrics beside their baselines,
and the command; the model card, :mod:`bigbird_dna.model.model_card`, renders it), and the default
prediction window of a classifier (:func:`training_window`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from bigbird_dna.genome import open_genome
from bigbird_dna.inference.batching import bases_that_fit
from bigbird_dna.model.model_card import portable, portable_tree
from bigbird_dna.tokenizer import DNATokenizer


def genome_record(run_dir: Path) -> dict[str, Any] | None:
    """Name, bp and records of the FASTA a genome run indexed, and its split sizes (``split_manifest.json``)."""
    manifest_path = run_dir / "split_manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.is_file() else {}
    if "fasta" not in manifest:  # labelled tasks write a manifest of their own
        return None
    with open_genome(manifest.get("indexed_copy") or manifest["fasta"]) as genome:
        lengths = genome.record_lengths
    # a genome MLM run's manifest has per-split regions; a chromatin-intervals run's names only the FASTA
    splits = {split: part["total_bp"] for split, part in (manifest.get("splits") or {}).items()
              if isinstance(part, dict) and "total_bp" in part}
    return {"name": Path(manifest["fasta"]).name, "bp": sum(lengths.values()), "records": len(lengths),
            **({"split_bp": splits} if splits else {})}


def training_record(data: dict[str, Any], tokenizer: dict[str, Any], summary: dict[str, Any],
                    overrides: list[str], run_dir: str | os.PathLike, task: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """What a finished run knows about its model, for ``metadata.training``, with no absolute path.

    Args:
        data: the run's ``data`` config (plain); file paths become names.
        tokenizer: the run's ``tokenizer`` config (plain).
        summary: the run's summary: ``global_step`` and every ``split/metric`` (baselines included).
        overrides: the command's Hydra overrides.
        run_dir: the run directory (paths inside it are kept relative to it).
        task: the run's ``task`` config (plain); a ``backbone`` is recorded with its own origin.
    """
    run_dir = Path(run_dir)
    metrics = {k: v for k, v in summary.items() if "/" in k and isinstance(v, (int, float))}
    backbone = backbone_record(task.get("backbone"), run_dir) if task else None
    command = " ".join(["python -m bigbird_dna.train", *overrides])
    return {"data": portable_tree({k: v for k, v in data.items() if k != "_target_"}, run_dir),
            "fasta": genome_record(run_dir), "tokenizer": portable_tree(tokenizer, run_dir),
            "steps": summary.get("global_step"), "metrics": metrics, "command": portable(command, run_dir),
            **({"backbone": backbone} if backbone else {})}


def backbone_record(path: str | None, run_dir: Path) -> dict[str, Any] | None:
    """Where a fine-tuned model's encoder came from: the backbone export's folder (``<its run>/export``,
    never an absolute path), its task, and the genome and command it was trained with."""
    if not path:
        return None
    parts = Path(path).resolve().parts
    shown = portable(path, run_dir) if str(Path(path).resolve()).startswith(str(run_dir.resolve())) else \
        "/".join(parts[-2:])
    info: dict[str, Any] = {"path": shown}
    config_file = Path(path) / "config.json"
    if config_file.is_file():
        config = json.loads(config_file.read_text())
        training = (config.get("metadata") or {}).get("training") or {}
        info.update(task=config.get("task"), command=training.get("command"),
                    fasta=(training.get("fasta") or {}).get("name"))
    return info


def training_window(datamodule: Any, tokenizer: DNATokenizer, max_tokens: int) -> int | None:
    """The window in bp a model reads by default (``predict_window_bp``): the length of the longest
    sequences it trained on (a sample from ``datamodule.training_sample()``), or, where those need
    more than ``max_tokens`` tokens with ``[CLS]`` and ``[SEP]`` (training cut them), the bases that
    fit at their bases per token. ``None`` when the data gives no sample (a stream)."""
    sample = getattr(datamodule, "training_sample", list)()
    if not sample:
        return None
    tokens = [len(ids) + 2 for ids in tokenizer.encode_batch(list(sample))]
    if max(tokens) <= max_tokens:
        return max(map(len, sample))
    return min(bases_that_fit(len(seq), count, max_tokens) for seq, count in zip(sample, tokens) if count > max_tokens)
