"""Fixtures of the promoter tests: toy genomes, a tiny tokenizer, and exports made without training."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from tests.conftest import FAST_OVERRIDES, LAMBDA

# FAST_OVERRIDES minus the genome-window data keys, which promoter data configs do not have.
# The classification baselines are off (tests/baselines runs them end to end).
PROMOTER_FAST = [o for o in FAST_OVERRIDES if not o.startswith("data.")] + ["data.num_workers=0",
                                                                            "data.baselines.enabled=false"]
TINY_MODEL = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "max_positions": 256,
              "dropout": 0.0, "attention": {"block_size": 16}}


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


def lambda_seq() -> str:
    return "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])


def write_fasta(path: Path, records: dict[str, str], width: int = 60) -> Path:
    """A FASTA of ``records``; gzip-compressed when ``path`` ends in ``.gz``."""
    text = "".join(f">{name}\n" + "".join(seq[i:i + width] + "\n" for i in range(0, len(seq), width))
                   for name, seq in records.items())
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as handle:
            handle.write(text)
    else:
        path.write_text(text)
    return path


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from bigbird_dna.tokenizer import train_bpe_tokenizer

    seq = lambda_seq()
    return train_bpe_tokenizer([seq[i:i + 2000] for i in range(0, len(seq), 2000)], vocab_size=128,
                               max_token_length=8)


def make_export(out_dir: Path, task: str, tokenizer, predict_window_bp: int = 100, **model_overrides) -> Path:
    """An untrained export of ``task`` ("promoter" or "mlm") that has run one forward pass;
    ``model_overrides`` change ``TINY_MODEL`` (e.g. ``position="absolute"``)."""
    import torch

    from bigbird_dna.model.export import write_export
    from bigbird_dna.tasks.mlm import MLMTask
    from bigbird_dna.tasks.promoter import PromoterTask

    torch.manual_seed(0)
    model = {**TINY_MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": 0, **model_overrides}
    if task == "mlm":
        module = MLMTask(model, {}, tokenizer_sha256=tokenizer.sha256)
        task_config = {"name": "mlm"}
    else:
        module = PromoterTask(model, {}, num_labels=1, head={"dropout": 0.0}, tokenizer_sha256=tokenizer.sha256)
        task_config = {"name": "promoter", "head": {"dropout": 0.0}, "predict_window_bp": predict_window_bp}
    ids = torch.randint(5, tokenizer.vocab_size, (1, 200))
    module.eval()
    module(ids, torch.ones_like(ids, dtype=torch.bool))  # pins the layout of 200 tokens
    return write_export(out_dir, task, module.state_dict(), module.config.to_dict(), tokenizer, task_config=task_config)
