"""Exports load with ``transformers``' Auto classes (``trust_remote_code=True``) and give
``BigBirdDNA``'s outputs: MLM logits, hidden states, and the logits of every classifier head."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.model.export import load_export
from tests.hf.conftest import HEADS, PINNED_TOKENS, windows

transformers = pytest.importorskip("transformers")
TOL = 1e-5


def _batch(model: BigBirdDNA, count: int = 4, length: int = 600):
    return model.encode(windows(count, length))  # ragged: right-padded, with a mask


def test_auto_config_reads_the_project_schema_and_load_export_still_does(hf_exports):
    for task, path in hf_exports.items():
        config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=True)
        export = load_export(path)
        assert (config.model_type, config.task, config.model) == ("bigbird_dna", task, export.model_config)
        assert config.hidden_size == export.model_config["hidden_size"]
        auto_map = json.loads((path / "config.json").read_text())["auto_map"]
        head_class = "AutoModelForMaskedLM" if task == "mlm" else "AutoModelForSequenceClassification"
        assert set(auto_map) == {"AutoConfig", "AutoModel", head_class}


def test_masked_lm_logits_equal_bigbirddna(hf_exports):
    ours = BigBirdDNA.from_pretrained(hf_exports["mlm"], device="cpu", precision="fp32")
    hf = transformers.AutoModelForMaskedLM.from_pretrained(hf_exports["mlm"], trust_remote_code=True)
    ids, mask = _batch(ours)
    assert not mask.all()  # padding is exercised
    with torch.no_grad():
        expected = ours.module(ids, mask)
        got = hf(input_ids=ids, attention_mask=mask.long()).logits
    assert got.shape == (*ids.shape, ours.tokenizer.vocab_size)
    torch.testing.assert_close(got, expected, atol=TOL, rtol=0)


@pytest.mark.parametrize("task", ["mlm", "promoter"])
def test_auto_model_hidden_states_equal_embed(hf_exports, task):
    ours = BigBirdDNA.from_pretrained(hf_exports[task], device="cpu", precision="fp32")
    hf = transformers.AutoModel.from_pretrained(hf_exports[task], trust_remote_code=True)
    seqs = windows(3, 500)
    hidden, mask = ours.embed(seqs, pool=None)
    ids, _ = ours.encode(seqs)
    with torch.no_grad():
        got = hf(input_ids=ids, attention_mask=mask.long()).last_hidden_state
    torch.testing.assert_close(got[mask], hidden[mask], atol=TOL, rtol=0)


@pytest.mark.parametrize("task,problem_type", [("promoter", "multi_label_classification"),
                                               ("classify", "single_label_classification"),
                                               ("chromatin", "multi_label_classification")])
def test_sequence_classification_logits_equal_bigbirddna(hf_exports, task, problem_type):
    ours = BigBirdDNA.from_pretrained(hf_exports[task], device="cpu", precision="fp32")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(hf_exports[task], trust_remote_code=True)
    assert (hf.config.num_labels, hf.config.problem_type) == (HEADS[task], problem_type)
    if task == "classify":
        assert [hf.config.id2label[i] for i in range(3)] == ours.class_names
    ids, mask = _batch(ours)
    with torch.no_grad():
        expected = ours.module(ids, mask)
        got = hf(input_ids=ids, attention_mask=mask.long()).logits
    assert got.shape == (len(ids), HEADS[task])
    torch.testing.assert_close(got, expected, atol=TOL, rtol=0)


def test_classifier_loss_follows_problem_type(hf_exports):
    ids = torch.randint(5, 100, (4, 50))
    promoter = transformers.AutoModelForSequenceClassification.from_pretrained(hf_exports["promoter"],
                                                                               trust_remote_code=True)
    labels = torch.tensor([0, 1, 1, 0])
    out = promoter(input_ids=ids, labels=labels)  # binary: one logit, BCE on [B] labels
    expected = torch.nn.functional.binary_cross_entropy_with_logits(out.logits[:, 0], labels.float())
    torch.testing.assert_close(out.loss, expected)
    classify = transformers.AutoModelForSequenceClassification.from_pretrained(hf_exports["classify"],
                                                                               trust_remote_code=True)
    labels = torch.tensor([0, 2, 1, 2])
    out = classify(input_ids=ids, labels=labels)
    torch.testing.assert_close(out.loss, torch.nn.functional.cross_entropy(out.logits, labels))


def test_pinned_layouts_are_read_from_the_weights_not_regenerated(hf_exports, tmp_path):
    """With the config's layout seed changed, a model that regenerated its layouts would attend
    over other random blocks; the loaded one must still match the export's own graph."""
    copy = shutil.copytree(hf_exports["promoter"], tmp_path / "reseeded")
    config = json.loads((copy / "config.json").read_text())
    config["model"]["attention"]["seed"] = 12345
    (copy / "config.json").write_text(json.dumps(config))
    ours = BigBirdDNA.from_pretrained(hf_exports["promoter"], device="cpu", precision="fp32")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(copy, trust_remote_code=True)
    ids = torch.randint(5, 100, (2, PINNED_TOKENS))
    with torch.no_grad():
        expected = ours.module(ids, torch.ones_like(ids, dtype=torch.bool))
        torch.testing.assert_close(hf(input_ids=ids).logits, expected, atol=TOL, rtol=0)
        hf.encoder.layouts._pinned.clear()  # now regenerated from seed 12345
        assert (hf(input_ids=ids).logits - expected).abs().max() > 1e-4


def test_auto_tokenizer_gives_bigbirddna_ids(hf_exports):
    ours = BigBirdDNA.from_pretrained(hf_exports["mlm"], device="cpu")
    tokenizer = transformers.AutoTokenizer.from_pretrained(hf_exports["mlm"], trust_remote_code=True)
    seqs = windows(3, 300)
    ids, mask = ours.encode(seqs)
    encoded = tokenizer(seqs, padding=True, return_tensors="pt")
    assert torch.equal(encoded["input_ids"], ids)
    assert torch.equal(encoded["attention_mask"].bool(), mask)
