"""The ``transformers`` face of an export: ``AutoConfig`` / ``AutoModel*`` with ``trust_remote_code=True``.

:func:`write_hf_export` is :func:`~bigbird_dna.model.export.write_export` with
``model.safetensors`` (the weights file ``transformers`` reads), the keys ``transformers`` looks for
in ``config.json`` (:func:`hf_config_fields`), and this package's two modules copied beside them
(:data:`REMOTE_CODE`): ``configuration_bigbird_dna.py`` (:class:`BigBirdDNAConfig`) and
``modeling_bigbird_dna.py`` (the model classes, over the installed ``bigbird_dna``). Importing this
package does not import ``transformers``; only loading those two modules does.

Which classes an export maps (``auto_map``): every export ``AutoModel`` (hidden states); an MLM
export ``AutoModelForMaskedLM``; a classifier (a ``head.out`` layer)
``AutoModelForSequenceClassification``, with ``problem_type`` ``single_label_classification`` for
``classify`` (softmax over C classes) and ``multi_label_classification`` otherwise (promoter: one
logit, binary; chromatin: one sigmoid per profile).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bigbird_dna.model.export import write_export
from bigbird_dna.tokenizer import DNATokenizer

MODEL_TYPE = "bigbird_dna"
REMOTE_CODE = ("configuration_bigbird_dna.py", "modeling_bigbird_dna.py")
_CONFIG = "configuration_bigbird_dna.BigBirdDNAConfig"
_MODELING = "modeling_bigbird_dna."
SOFTMAX_TASKS = ("classify",)  # tasks whose classes exclude each other


def hf_config_fields(task: str, state_dict: dict[str, Any], task_config: dict[str, Any] | None) -> dict[str, Any]:
    """``model_type``, ``architectures``, ``auto_map`` and, for a classifier, ``problem_type`` and labels."""
    auto_map = {"AutoConfig": _CONFIG, "AutoModel": _MODELING + "BigBirdDNAModel"}
    fields: dict[str, Any] = {"model_type": MODEL_TYPE}
    head = state_dict.get("head.out.weight")
    if head is not None:
        architecture = "BigBirdDNAForSequenceClassification"
        auto_map["AutoModelForSequenceClassification"] = _MODELING + architecture
        names = (task_config or {}).get("class_names") or [f"LABEL_{i}" for i in range(head.shape[0])]
        fields.update(problem_type="single_label_classification" if task in SOFTMAX_TASKS
                      else "multi_label_classification",
                      id2label={str(i): str(name) for i, name in enumerate(names)},
                      label2id={str(name): i for i, name in enumerate(names)})
    elif task == "mlm":
        architecture = "BigBirdDNAForMaskedLM"
        auto_map["AutoModelForMaskedLM"] = _MODELING + architecture
    else:
        architecture = "BigBirdDNAModel"
    return {**fields, "architectures": [architecture], "auto_map": auto_map}


def remote_code_files() -> dict[str, str]:
    """``{file name: source}`` of the two modules an export carries for ``trust_remote_code``."""
    here = Path(__file__).parent
    return {name: (here / name).read_text() for name in REMOTE_CODE}


def write_hf_export(out_dir: str | os.PathLike, task: str, state_dict: dict[str, Any], model_config: dict,
                    tokenizer: DNATokenizer, task_config: dict | None = None,
                    metadata: dict | None = None) -> Path:
    """Write an export (``model.safetensors``) that bigbird_dna and ``transformers`` both load.

    Arguments as :func:`~bigbird_dna.model.export.write_export`; ``metadata`` must hold no absolute path.
    """
    return write_export(out_dir, task, state_dict, model_config, tokenizer, task_config=task_config,
                        metadata=metadata, weights="safetensors",
                        extra_config=hf_config_fields(task, state_dict, task_config),
                        extra_files=remote_code_files())
