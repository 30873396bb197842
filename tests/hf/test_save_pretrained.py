"""A model fine-tuned in ``transformers`` and saved with ``save_pretrained`` keeps its pinned
attention layouts, and the folder (with the tokenizer saved beside it) loads in ``BigBirdDNA``."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from bigbird_dna import BigBirdDNA
from bigbird_dna.model.export import LAYOUTS_KEY
from tests.hf.conftest import PINNED_TOKENS

transformers = pytest.importorskip("transformers")


def _saved(hf_exports, tmp_path, name="saved"):
    path = hf_exports["classify"]
    model = transformers.AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True)
    with torch.no_grad():  # stands in for fine-tuning: weights that differ from the export's
        model.head.out.bias.add_(0.5)
    out = tmp_path / name
    model.save_pretrained(out)
    transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=True).save_pretrained(out)
    return model, out


def _reseed(folder) -> None:
    """Another layout seed in config.json: only pinned layouts keep the trained graph now."""
    config = json.loads((folder / "config.json").read_text())
    config["model"]["attention"]["seed"] = 12345
    (folder / "config.json").write_text(json.dumps(config))


def test_save_pretrained_keeps_the_layouts_and_bigbirddna_loads_the_folder(hf_exports, tmp_path):
    model, out = _saved(hf_exports, tmp_path)
    with safe_open(str(out / "model.safetensors"), framework="pt") as handle:
        assert any(name.startswith(LAYOUTS_KEY) for name in handle.keys())
    _reseed(out)
    ids = torch.randint(5, 100, (2, PINNED_TOKENS))
    with torch.no_grad():
        want = model(input_ids=ids).logits
        ours = BigBirdDNA.from_pretrained(out, device="cpu", precision="fp32")
        torch.testing.assert_close(ours.module(ids, torch.ones_like(ids, dtype=torch.bool)), want, atol=1e-5, rtol=0)
        again = transformers.AutoModelForSequenceClassification.from_pretrained(out, trust_remote_code=True)
        torch.testing.assert_close(again(input_ids=ids).logits, want, atol=1e-5, rtol=0)


def test_a_folder_saved_without_layouts_loads_with_regenerated_ones(hf_exports, tmp_path):
    model, out = _saved(hf_exports, tmp_path)
    transformers.PreTrainedModel.save_pretrained(model, out)  # what an older save (or a Trainer checkpoint) wrote
    with safe_open(str(out / "model.safetensors"), framework="pt") as handle:
        assert not any(name.startswith(LAYOUTS_KEY) for name in handle.keys())
    ids = torch.randint(5, 100, (2, PINNED_TOKENS))
    with torch.no_grad():
        ours = BigBirdDNA.from_pretrained(out, device="cpu", precision="fp32")  # same seed: the same graph
        torch.testing.assert_close(ours.module(ids, torch.ones_like(ids, dtype=torch.bool)),
                                   model(input_ids=ids).logits, atol=1e-5, rtol=0)
