"""Untrained tiny classifiers with weights large enough that their outputs move with the input:
one-output (promoter), three labels (chromatin-like sigmoid) and three classes (softmax), with char
tokens, plus a 3-mer one-output model and a one-output hybrid (a convolutional stem pooling 4 bases).
Exports are written once per session."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.promoter.conftest import TINY_MODEL

SEQ_LEN = 60


def write_classifier(out_dir: Path, tokenizer, num_labels: int, kind: str = "sigmoid", names=None,
                     seed: int = 0, **model_settings) -> Path:
    """An export of an untrained one-layer classifier whose head is scaled up (std 0.3), mean_max pooling."""
    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.model.config import EncoderConfig
    from bigbird_dna.model.networks import SequenceClassifier
    from bigbird_dna.model.outputs import KINDS, ModelOutput

    torch.manual_seed(seed)
    model = {**TINY_MODEL, "num_layers": 1, "vocab_size": tokenizer.vocab_size, "pad_id": 0, **model_settings}
    output = ModelOutput(KINDS[kind], tuple(names or [f"label_{i}" for i in range(num_labels)]))
    head = {"dropout": 0.0, "pooling": "mean_max"}
    module = SequenceClassifier(EncoderConfig.from_dict(model), output, head)
    module.eval()
    with torch.no_grad():
        for name, weight in module.named_parameters():
            if name.startswith("head.") and weight.dim() == 2:
                weight.normal_(0.0, 0.3)
            if name == "encoder.token_embedding.weight":
                weight.normal_(0.0, 0.5)
                weight[0] = 0.0
        # centre the logits on random sequences, so that probabilities are not saturated
        ids = torch.randint(5, 9, (64, SEQ_LEN + 2))
        ids[:, 0], ids[:, -1] = 2, 3
        module.head.out.bias -= module.logits(ids, None).mean(0)
    return write_hf_export(out_dir, "promoter" if num_labels == 1 else ("classify" if kind == "softmax" else
                                                                           "chromatin"),
                           module.state_dict(), module.config.to_dict(), tokenizer, output,
                           {"head": head, "predict_window_bp": SEQ_LEN})


@pytest.fixture(scope="session")
def exports(tmp_path_factory) -> dict[str, Path]:
    from bigbird_dna.tokenizer import char_tokenizer, kmer_tokenizer

    folder = tmp_path_factory.mktemp("attribution_exports")
    return {
        "promoter": write_classifier(folder / "promoter", char_tokenizer(), 1),
        "labels": write_classifier(folder / "labels", char_tokenizer(), 3, names=["CTCF", "DNase", "H3K4me3"]),
        "classes": write_classifier(folder / "classes", char_tokenizer(), 3, "softmax", ["enhancer", "promoter",
                                                                                       "other"]),
        "kmer": write_classifier(folder / "kmer", kmer_tokenizer(3), 1),
        "hybrid": write_classifier(folder / "hybrid", char_tokenizer(), 1,
                                   stem={"kernel": 7, "channels": 16, "blocks": 1, "pool": 4}),
    }


@pytest.fixture(scope="session")
def models(exports):
    from bigbird_dna.pretrained import BigBirdDNA

    return {name: BigBirdDNA.from_pretrained(path, device="cpu") for name, path in exports.items()}


@pytest.fixture(scope="session")
def seqs() -> list[str]:
    import numpy as np

    rng = np.random.default_rng(3)
    return ["".join(rng.choice(list("ACGT"), SEQ_LEN)) for _ in range(3)] + ["ACGTNacgtTTGACA" * 4]
