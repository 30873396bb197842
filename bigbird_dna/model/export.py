"""Inference exports: a self-contained directory that later tasks and ``predict`` load.

Layout of an export directory::

    export/
      model.pt or model.safetensors   the state_dict (tensors, incl. the pinned attention layouts)
      config.json     {"task": ..., "model": EncoderConfig dict, "output": {"kind", "names"},
                      "task_config": {...}, "metadata": {...}}
      tokenizer.json  the exact tokenizer the ids come from, HF-compatible (:mod:`bigbird_dna.tokenizer.hf`)
      tokenizer_config.json, special_tokens_map.json   what ``transformers`` reads beside it
      README.md       the model card (:mod:`bigbird_dna.model.model_card`), rendered from config.json
      *.py            with ``extra_files``: e.g. the ``transformers`` remote code (:mod:`bigbird_dna.hf`)

``model.pt`` (what training writes) is loaded with ``torch.load(weights_only=True)``.
``model.safetensors`` (what ``BigBirdDNA.save_pretrained`` writes) holds no pickle at all: the
encoder's attention layouts (``encoder._extra_state``, nested dicts of int tables and sizes) are
flattened into plain tensors named ``encoder._extra_state::layouts::<layer>/<blocks>::<table>``,
and the few non-tensor leaves (block sizes, head counts) travel as JSON in the file's metadata.
Exports written before the HF-compatible tokenizer (a bare BPE ``tokenizer.json``) still load.

The directory is written under a temporary name and renamed into place
(:func:`~bigbird_dna.runtime.atomic.atomic_directory`), so a crash never leaves a half-written
export that looks valid. Nothing written holds an absolute path: the callers pass portable
metadata (file names, paths relative to the run directory).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.model_card import render_card
from bigbird_dna.model.outputs import ModelOutput, read_output
from bigbird_dna.runtime.atomic import atomic_directory, disk_full_cause, follow_umask
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.hf import hf_side_files, hf_tokenizer_json, project_tokenizer

EXPORT_FILES = ("config.json", "tokenizer.json")
WEIGHT_FILES = ("model.safetensors", "model.pt")  # the first one present is loaded
_NEST = "::"  # joins nested-dict keys of non-parameter state in safetensors names
_VALUES_KEY = "bigbird_dna.values"
LAYOUTS_KEY = "encoder._extra_state"  # the encoder's pinned attention layouts in a state_dict


@dataclass
class Export:
    """A loaded export: plain config, weights and tokenizer.

    ``output`` is what the head gives (:mod:`bigbird_dna.model.outputs`), as ``config.json`` records
    it or, for older exports, as their weights imply; ``None`` for an encoder without a head.
    """

    task: str
    model_config: dict[str, Any]
    task_config: dict[str, Any]
    metadata: dict[str, Any]
    state_dict: dict[str, Any]
    tokenizer: DNATokenizer
    path: Path
    output: ModelOutput | None = None


def write_export(out_dir: str | os.PathLike, task: str, state_dict: dict[str, Any], model_config: dict,
                 tokenizer: DNATokenizer, task_config: dict | None = None, output: ModelOutput | None = None,
                 metadata: dict | None = None, weights: str = "pt", extra_config: dict | None = None,
                 extra_files: dict[str, str] | None = None) -> Path:
    """Write an export directory atomically and return its path.

    ``output``: what the head gives, recorded as ``config.json``'s ``output`` (``None``: not recorded;
    :func:`~bigbird_dna.model.outputs.read_output` then reads it from the weights, as for older exports).
    ``weights``: ``"pt"`` (``model.pt``) or ``"safetensors"`` (``model.safetensors``, no pickle).
    ``extra_config``: more top-level keys of ``config.json`` (the keys above win on a clash).
    ``extra_files``: ``{file name: text}`` written beside the rest.

    Raises:
        InputError: the folder cannot be written (read-only, under a file) or the disk is full; an
            earlier export at ``out_dir`` is left as it was.
    """
    if weights not in ("pt", "safetensors"):
        raise ValueError(f"weights={weights!r}: use 'pt' or 'safetensors'")
    try:
        with atomic_directory(out_dir) as staging:
            if weights == "pt":
                with open(staging / "model.pt", "wb") as handle:  # a Python handle: a full disk is an OSError
                    torch.save({k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in state_dict.items()},
                               handle)
            else:
                save_safetensors(state_dict, staging / "model.safetensors")
            config = {**(extra_config or {}), "task": task, "model": model_config, "task_config": task_config or {},
                      "metadata": {**(metadata or {}), "tokenizer_sha256": tokenizer.sha256}}
            if output is not None:
                config["output"] = output.to_dict()
            (staging / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True))
            (staging / "tokenizer.json").write_text(hf_tokenizer_json(tokenizer))
            files = {**hf_side_files(EncoderConfig.input_tokens_of(model_config)), **(extra_files or {}),
                     "README.md": render_card(config, state_dict)}
            for name, text in files.items():
                (staging / name).write_text(text)
    except (OSError, RuntimeError) as err:  # torch.save reports a full disk as a RuntimeError
        cause = disk_full_cause(err) or (err if isinstance(err, OSError) else None)
        if cause is None:
            raise
        raise InputError(f"cannot write the export {out_dir}: {cause.strerror or cause}; nothing was written under "
                         "that name (an earlier export there is intact). Free space or write to another folder."
                         ) from err
    return Path(out_dir)


def _flatten(state: dict[str, Any], prefix: str = "") -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """Nested state -> ``(tensors, other leaves)`` keyed by ``_NEST``-joined names."""
    tensors: dict[str, torch.Tensor] = {}
    values: dict[str, Any] = {}
    for key, value in state.items():
        name = f"{prefix}{_NEST}{key}" if prefix else key
        if isinstance(value, dict):
            more_tensors, more_values = _flatten(value, name)
            tensors.update(more_tensors)
            values.update(more_values)
        elif torch.is_tensor(value):
            # a copy of each: tied weights (the MLM decoder) share storage, which safetensors refuses
            tensors[name] = value.detach().cpu().contiguous().clone()
        else:
            values[name] = value
    return tensors, values


def _unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for name, value in flat.items():
        *parents, leaf = name.split(_NEST)
        node = state
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return state


def save_safetensors(state_dict: dict[str, Any], path: str | os.PathLike) -> None:
    """Write a state_dict, nested extra states included, as one safetensors file (no pickle)."""
    from safetensors.torch import save_file

    tensors, values = _flatten(state_dict)
    save_file(tensors, str(path), metadata={"format": "pt", _VALUES_KEY: json.dumps(values)})
    follow_umask(path)  # save_file creates it 0600


def add_to_safetensors(path: str | os.PathLike, state: dict[str, Any]) -> None:
    """Add ``state`` (e.g. ``{LAYOUTS_KEY: layouts}``) to the safetensors file at ``path``, keeping its
    tensors and metadata; rewritten under a temporary name in the same folder, then renamed."""
    from safetensors import safe_open
    from safetensors.torch import save_file

    path = Path(path)
    with safe_open(str(path), framework="pt") as handle:
        tensors = {name: handle.get_tensor(name) for name in handle.keys()}
        metadata = dict(handle.metadata() or {})
    more_tensors, more_values = _flatten(state)
    values = {**json.loads(metadata.get(_VALUES_KEY, "{}")), **more_values}
    partial = path.with_name(f".{path.name}.partial")
    save_file({**tensors, **more_tensors}, str(partial), metadata={**metadata, "format": "pt",
                                                                   _VALUES_KEY: json.dumps(values)})
    follow_umask(partial)
    os.replace(partial, path)


def load_safetensors(path: str | os.PathLike, only: str | None = None) -> dict[str, Any]:
    """The state_dict :func:`save_safetensors` wrote, with its nested extra states rebuilt; with
    ``only``, just the entry of that top-level key (e.g. :data:`LAYOUTS_KEY`), read alone."""
    from safetensors import safe_open

    def wanted(name: str) -> bool:
        return only is None or name.split(_NEST, 1)[0] == only

    with safe_open(str(path), framework="pt") as handle:
        flat: dict[str, Any] = {name: handle.get_tensor(name) for name in handle.keys() if wanted(name)}
        values = json.loads((handle.metadata() or {}).get(_VALUES_KEY, "{}"))
        flat.update({name: value for name, value in values.items() if wanted(name)})
    return _unflatten(flat)


def load_export(path: str | os.PathLike, task: str | None = None) -> Export:
    """Load an export directory (either weights file); with ``task``, refuse an export of another task."""
    path = Path(path)
    missing = [name for name in EXPORT_FILES if not (path / name).is_file()]
    weights = next((path / name for name in WEIGHT_FILES if (path / name).is_file()), None)
    if weights is None:
        missing.append(" or ".join(WEIGHT_FILES))
    if missing:
        raise InputError(f"{path} is not a bigbird_dna export: missing {', '.join(missing)}. "
                         "Point at the 'export' folder a training run wrote.")
    config = json.loads((path / "config.json").read_text())
    if task is not None and config["task"] != task:
        raise InputError(f"{path} holds a '{config['task']}' model, but a '{task}' model is needed. "
                         f"Train one with task={task}.")
    if weights.suffix == ".safetensors":
        state = load_safetensors(weights)
    else:
        state = torch.load(weights, map_location="cpu", weights_only=True)
    return Export(task=config["task"], model_config=config["model"], task_config=config["task_config"],
                  metadata=config["metadata"], state_dict=state,
                  tokenizer=project_tokenizer((path / "tokenizer.json").read_text()), path=path,
                  output=read_output(config, state))
