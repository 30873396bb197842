"""Exports for the ``transformers`` tests: untrained tiny models of every head, written by
``write_hf_export`` after one forward pass at 200 tokens (13 blocks of 16: a sparse, pinned layout),
and one MLM export from a real (fast) training run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.conftest import LAMBDA, compose
from tests.promoter.conftest import TINY_MODEL, lambda_seq

PINNED_TOKENS = 200
HEADS = {"promoter": 1, "classify": 3, "chromatin": 5}


@pytest.fixture(scope="session")
def hf_tokenizer():
    from bigbird_dna.tokenizer import train_bpe_tokenizer

    seq = lambda_seq()
    return train_bpe_tokenizer([seq[i:i + 2000] for i in range(0, len(seq), 2000)], vocab_size=128,
                               max_token_length=8)


def tiny_module(task: str, tokenizer, seed: int = 0) -> torch.nn.Module:
    """An untrained task module (eval) with its layout for PINNED_TOKENS tokens pinned."""
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from bigbird_dna.tasks.classify import ClassifyTask
    from bigbird_dna.tasks.mlm import MLMTask

    torch.manual_seed(seed)
    model = {**TINY_MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": 0, "conv_kernel": 3,
             "attention": {**TINY_MODEL["attention"], "seed": seed}}
    head = {"dropout": 0.0, "pooling": "mean_max"}
    if task == "mlm":
        module = MLMTask(model, {}, tokenizer_sha256=tokenizer.sha256)
    elif task == "classify":
        module = ClassifyTask(model, {}, class_names=["a", "b", "c"], head=head, tokenizer_sha256=tokenizer.sha256)
    else:
        module = SequenceClassificationTask(model, {}, num_labels=HEADS[task], head=head,
                                            tokenizer_sha256=tokenizer.sha256)
    module.eval()
    ids = torch.randint(5, tokenizer.vocab_size, (1, PINNED_TOKENS))
    module(ids, torch.ones_like(ids, dtype=torch.bool))
    return module


def task_config(task: str, module) -> dict:
    config = {"name": task}
    if task != "mlm":
        config["head"] = {"dropout": 0.0, "pooling": "mean_max"}
    if task == "classify":
        config["class_names"] = list(module.class_names)
    return config


@pytest.fixture(scope="session")
def hf_exports(tmp_path_factory, hf_tokenizer) -> dict[str, Path]:
    """``{task: export folder}`` for mlm, promoter, classify and chromatin."""
    from bigbird_dna.hf import write_hf_export

    folder = tmp_path_factory.mktemp("hf_exports")
    exports = {}
    for task in ("mlm", *HEADS):
        module = tiny_module(task, hf_tokenizer)
        exports[task] = write_hf_export(folder / task, task, module.state_dict(), module.config.to_dict(),
                                        hf_tokenizer, task_config=task_config(task, module))
    return exports


@pytest.fixture(scope="session")
def trained_mlm_run(tmp_path_factory) -> Path:
    """The run directory of a fast MLM training run on lambda phage (debug=fast)."""
    from bigbird_dna.train import run

    run_dir = tmp_path_factory.mktemp("hf_trained") / "run"
    run(compose(["debug=fast", f"data.fasta={LAMBDA}"], run_dir))
    return run_dir


def windows(count: int, length: int, offset: int = 0) -> list[str]:
    """``count`` lambda-phage windows of ``length`` bp, some in lowercase (soft-masked)."""
    seq = lambda_seq()
    out = [seq[offset + i * 97:offset + i * 97 + length] for i in range(count)]
    return [s.lower() if i % 3 == 2 else s for i, s in enumerate(out)]
