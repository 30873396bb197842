"""The model card (``README.md``) of an export, in the Hugging Face Hub's format.

A YAML header (``library_name``, ``pipeline_tag``, ``tags``, ``license``), then what a reader needs
to judge the model: the training data (file names and sizes, never a directory), steps, tokenizer,
model shape, attention layout, the run's metrics next to their baselines, and the command.

The card is rendered from the export's ``config.json`` alone (:func:`render_card`), so a training
export and a :meth:`~bigbird_dna.BigBirdDNA.save_pretrained` copy of it carry the same card. What
only the training run knows travels in ``metadata.training``
(:func:`bigbird_dna.training.export_record.training_record`), written after validation, test and
baselines, so the metrics in the card are the run's final ones.

No absolute path is written: :func:`portable` reduces a path inside the run directory to a path
relative to it, and any other path to its file name.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import torch

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.outputs import read_output

LICENSE_TODO = "license: other  # TODO: set the license of the weights and of the training data"
# A POSIX absolute path inside a string: a "/" not preceded by a word character, a dot or a slash.
_ABSOLUTE = re.compile(r"(?<![\w./])/[^\s,'\"\[\]{}()=]+")


def portable(text: str, run_dir: str | os.PathLike) -> str:
    """``text`` with every absolute path made relative to ``run_dir`` (inside it) or cut to its name."""
    root = os.path.realpath(run_dir)

    def shorten(match: re.Match) -> str:
        path = os.path.realpath(match.group(0))
        if path == root or path.startswith(root + os.sep):
            return os.path.relpath(path, root)
        return os.path.basename(match.group(0).rstrip("/")) or "/"

    return _ABSOLUTE.sub(shorten, text)


def portable_tree(value: Any, run_dir: str | os.PathLike) -> Any:
    """:func:`portable` applied to every string in nested dicts and lists."""
    if isinstance(value, dict):
        return {k: portable_tree(v, run_dir) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [portable_tree(v, run_dir) for v in value]
    return portable(value, run_dir) if isinstance(value, str) else value


def count_parameters(state_dict: dict[str, Any]) -> int:
    """Parameters in a state_dict, each shared tensor (the MLM decoder's tied embedding) once."""
    seen: set[int] = set()
    total = 0
    for value in state_dict.values():
        if torch.is_tensor(value) and value.is_floating_point() and value.data_ptr() not in seen:
            seen.add(value.data_ptr())
            total += value.numel()
    return total


def _pipeline_tag(config: dict[str, Any], state_dict: dict[str, Any]) -> str | None:
    output = read_output(config, state_dict)
    return output.kind.pipeline_tag if output is not None else None


def _header(config: dict[str, Any], pipeline_tag: str | None) -> str:
    tags = ["dna", "genomics", "bigbird", "bigbird_dna", "block-sparse-attention", config["task"]]
    lines = ["---", "library_name: transformers"]
    if pipeline_tag:
        lines.append(f"pipeline_tag: {pipeline_tag}")
    lines += ["tags:", *(f"- {tag}" for tag in dict.fromkeys(tags)), LICENSE_TODO, "---"]
    return "\n".join(lines)


def _loading(config: dict[str, Any], pipeline_tag: str | None) -> str:
    auto = {"text-classification": "AutoModelForSequenceClassification",
            "fill-mask": "AutoModelForMaskedLM"}.get(pipeline_tag, "AutoModel")
    return "\n".join([
        "## Loading", "",
        "```python",
        f"from transformers import {auto}, AutoTokenizer",
        f'model = {auto}.from_pretrained("THIS_FOLDER", trust_remote_code=True)  # needs `pip install bigbird_dna`',
        'tokenizer = AutoTokenizer.from_pretrained("THIS_FOLDER", trust_remote_code=True)  # [CLS] ... [SEP]',
        "```", "",
        "or, with bigbird_dna's own API: `BigBirdDNA.from_pretrained(\"THIS_FOLDER\")` (`embed`, `predict`).",
    ])


def _training(metadata: dict[str, Any], model: dict[str, Any]) -> str:
    training = metadata.get("training") or {}
    lines = ["## Training", ""]
    fasta = training.get("fasta")
    if fasta:
        splits = ", ".join(f"{split} {bp:,} bp" for split, bp in fasta.get("split_bp", {}).items())
        lines.append(f"- Genome: `{fasta['name']}`, {fasta['bp']:,} bp in {fasta['records']:,} record(s)"
                     + (f" ({splits})" if splits else ""))
    data = {k: v for k, v in (training.get("data") or {}).items() if v not in (None, "", [], {})}
    if data:
        lines.append(f"- Data settings: `{json.dumps(data, sort_keys=True)}`")
    steps = training.get("steps", metadata.get("global_step"))
    seed = metadata.get("seed", "not recorded")
    lines.append(f"- Steps: {steps if steps is not None else 'not recorded'} (seed {seed})")
    tokenizer = training.get("tokenizer") or {}
    kind = tokenizer.get("kind", "the run's")
    lines.append(f"- Tokenizer: {kind}, {model.get('vocab_size')} tokens (`tokenizer.json`)")
    backbone = training.get("backbone")
    if backbone:
        origin = backbone.get("command") or "a command not recorded"
        genome = f" on `{backbone['fasta']}`" if backbone.get("fasta") else ""
        lines.append(f"- Fine-tuned from `{backbone['path']}`, a `{backbone.get('task')}` model trained{genome} "
                     f"with `{origin}`")
    if metadata.get("source_checkpoint"):
        lines.append(f"- Weights from the run's `{metadata['source_checkpoint']}`")
    if not training:
        lines.append("- The training data and command were not recorded with these weights.")
    return "\n".join(lines)


def _model(model: dict[str, Any], parameters: int) -> str:
    attention = model.get("attention", {})
    params = ", ".join(f"{k}={v}" for k, v in sorted((attention.get("params") or {}).items())) or "none"
    stem = model.get("stem")
    stem_line = [] if not stem else [
        "", f"Stem: full convolutions of {stem['kernel']} tokens ({stem['channels']} channels, "
        f"{stem['blocks']} residual blocks) before the attention layers; each of the {model.get('max_positions')} "
        f"attention positions but [CLS] and [SEP] reads {stem['pool']} input tokens, and the outputs come back "
        "at every input token."]
    return "\n".join([
        "## Model", "",
        "| layers | hidden | heads | intermediate | parameters | max tokens | positions | conv kernel |",
        "|---|---|---|---|---|---|---|---|",
        f"| {model.get('num_layers')} | {model.get('hidden_size')} | {model.get('num_heads')} | "
        f"{model.get('intermediate_size')} | {parameters:,} | {EncoderConfig.input_tokens_of(model) or None} | "
        f"{model.get('position', 'absolute')} | {model.get('conv_kernel', 0)} |", "",
        f"Attention: block-sparse, preset `{attention.get('preset')}`, block size {attention.get('block_size')} "
        f"tokens, {params} (window and random in blocks, global blocks per end), random-block seed "
        f"{attention.get('seed')}. The layouts the model trained on are stored in the weights file and "
        "reused on loading, so a reload attends over the same graph.",
        *stem_line,
    ])


def _number(value: float) -> str:
    """Counts as integers; scores to 4 decimals, so a model and its baseline compare digit for digit."""
    whole = isinstance(value, int) or (float(value).is_integer() and abs(value) >= 10)
    return f"{int(value):,}" if whole else f"{value:.4f}"


def _metrics(metadata: dict[str, Any]) -> str:
    metrics = (metadata.get("training") or {}).get("metrics") or {}
    lines = ["## Metrics", ""]
    if not metrics:
        return "\n".join([*lines, "No metrics were recorded with these weights."])
    lines += ["Scored by the training run on its own held-out val and test data (see Training); "
              "`baseline` rows are simple models scored on the same data.", "",
              "| metric | value |", "|---|---|"]
    ordered = sorted(metrics, key=lambda k: ("baseline" in k, k))
    lines += [f"| {key} | {_number(metrics[key])} |" for key in ordered]
    return "\n".join(lines)


def render_card(config: dict[str, Any], state_dict: dict[str, Any]) -> str:
    """``README.md`` text of an export from its ``config.json`` content and its weights."""
    tag = _pipeline_tag(config, state_dict)
    metadata, model = config.get("metadata") or {}, config["model"]
    command = (metadata.get("training") or {}).get("command")
    parts = [
        _header(config, tag),
        f"# bigbird_dna `{config['task']}` model",
        "A BigBird block-sparse Transformer encoder over DNA tokens, trained with bigbird_dna "
        f"(task `{config['task']}`).",
        _loading(config, tag), _training(metadata, model), _model(model, count_parameters(state_dict)),
        _metrics(metadata),
    ]
    if command:
        parts.append(f"## Command\n\nAs run; absolute paths are cut to file names (or made relative to the run "
                     f"directory).\n\n```\n{command}\n```")
    parts.append("## Limitations\n\nTODO: what the model was not tested on (other species, lengths, data sources).")
    return "\n\n".join(parts) + "\n"
