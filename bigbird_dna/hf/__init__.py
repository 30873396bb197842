"""The ``transformers`` face of an export: ``AutoConfig`` / ``AutoModel*`` with ``trust_remote_code=True``.

:func:`write_hf_export` is :func:`~bigbird_dna.model.export.write_export` with
``model.safetensors`` (the weights file ``transformers`` reads), the keys ``transformers`` looks for
in ``config.json`` (:func:`hf_config_fields`), and this package's two modules copied beside them
(:data:`REMOTE_CODE`): ``configuration_bigbird_dna.py`` (:class:`BigBirdDNAConfig`) and
``modeling_bigbird_dna.py`` (the model classes, over the installed ``bigbird_dna``). Importing this
package does not import ``transformers``; only loading those two modules does.

Which classes an export maps (``auto_map``) follows its output kind
(:mod:`bigbird_dna.model.outputs`): every export ``AutoModel`` (hidden states); a ``masked_lm``
export ``AutoModelForMaskedLM``; a ``sigmoid`` or ``softmax`` classifier
``AutoModelForSequenceClassification``, with the kind's ``problem_type``
(``multi_label_classification``: promoter, one logit, binary; chromatin, one sigmoid per profile;
``single_label_classification``: ``classify``, softmax over C classes) and its output names as labels.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bigbird_dna.model.export import write_export
from bigbird_dna.model.outputs import ModelOutput, read_output
from bigbird_dna.tokenizer import DNATokenizer

MODEL_TYPE = "bigbird_dna"
REMOTE_CODE = ("configuration_bigbird_dna.py", "modeling_bigbird_dna.py")
_CONFIG = "configuration_bigbird_dna.BigBirdDNAConfig"
_MODELING = "modeling_bigbird_dna."
_AUTO_CLASS = {"BigBirdDNAForSequenceClassification": "AutoModelForSequenceClassification",
               "BigBirdDNAForMaskedLM": "AutoModelForMaskedLM"}


def hf_config_fields(output: ModelOutput | None) -> dict[str, Any]:
    """``model_type``, ``architectures``, ``auto_map`` and, for a classifier, ``problem_type`` and labels."""
    auto_map = {"AutoConfig": _CONFIG, "AutoModel": _MODELING + "BigBirdDNAModel"}
    fields: dict[str, Any] = {"model_type": MODEL_TYPE}
    architecture = output.kind.hf_architecture if output is not None else "BigBirdDNAModel"
    if architecture in _AUTO_CLASS:
        auto_map[_AUTO_CLASS[architecture]] = _MODELING + architecture
    if output is not None and output.kind.hf_problem_type:
        fields.update(problem_type=output.kind.hf_problem_type,
                      id2label={str(i): name for i, name in enumerate(output.names)},
                      label2id={name: i for i, name in enumerate(output.names)})
    return {**fields, "architectures": [architecture], "auto_map": auto_map}


def remote_code_files() -> dict[str, str]:
    """``{file name: source}`` of the two modules an export carries for ``trust_remote_code``."""
    here = Path(__file__).parent
    return {name: (here / name).read_text() for name in REMOTE_CODE}


def write_hf_export(out_dir: str | os.PathLike, task: str, state_dict: dict[str, Any], model_config: dict,
                    tokenizer: DNATokenizer, output: ModelOutput | None = None, task_config: dict | None = None,
                    metadata: dict | None = None) -> Path:
    """Write an export (``model.safetensors``) that bigbird_dna and ``transformers`` both load.

    Arguments as :func:`~bigbird_dna.model.export.write_export`; ``metadata`` must hold no absolute path.
    Without ``output``, it is read from the weights and task settings as for an older export
    (:func:`~bigbird_dna.model.outputs.read_output`).
    """
    if output is None:
        output = read_output({"task": task, "task_config": task_config or {}}, state_dict)
    return write_export(out_dir, task, state_dict, model_config, tokenizer, task_config=task_config,
                        output=output, metadata=metadata, weights="safetensors",
                        extra_config=hf_config_fields(output), extra_files=remote_code_files())
