"""A training run's export: transformers-loadable, with a model card, and no absolute path."""

from __future__ import annotations

import json
import os

import pytest
import torch
import yaml

from bigbird_dna import BigBirdDNA
from bigbird_dna.model.export import write_export
from tests.conftest import REPO
from tests.hf.conftest import task_config, tiny_module, windows

transformers = pytest.importorskip("transformers")


def test_training_export_loads_in_transformers_with_bigbirddna_logits(trained_mlm_run):
    export = trained_mlm_run / "export"
    assert (export / "model.safetensors").is_file() and not (export / "model.pt").exists()
    ours = BigBirdDNA.from_pretrained(export, device="cpu", precision="fp32")
    hf = transformers.AutoModelForMaskedLM.from_pretrained(export, trust_remote_code=True)
    ids, mask = ours.encode(windows(3, 500))
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=ids, attention_mask=mask).logits, ours.module(ids, mask),
                                   atol=1e-5, rtol=0)


def test_shared_export_holds_no_absolute_path(trained_mlm_run):
    forbidden = {str(trained_mlm_run.parent.parent), os.path.expanduser("~"), str(REPO)}
    export = trained_mlm_run / "export"
    for path in export.rglob("*"):
        if path.suffix == ".safetensors":
            continue  # tensors, and a JSON header of layout sizes
        text = path.read_text()
        assert not [root for root in forbidden if root in text], path.name
    metadata = json.loads((export / "config.json").read_text())["metadata"]
    assert metadata["source_checkpoint"].startswith("checkpoints/")
    assert (trained_mlm_run / metadata["source_checkpoint"]).is_file()


def test_model_card_has_hub_header_data_metrics_and_command(trained_mlm_run):
    card = (trained_mlm_run / "export" / "README.md").read_text()
    _, header, body = card.split("---\n", 2)
    meta = yaml.safe_load(header)
    assert meta["library_name"] == "transformers" and meta["pipeline_tag"] == "fill-mask"
    assert {"dna", "genomics", "bigbird"} <= set(meta["tags"]) and meta["license"] == "other"
    summary = json.loads((trained_mlm_run / "summary.json").read_text())
    assert "`lambda_phage.fa`, 48,502 bp in 1 record(s)" in body
    assert f"- Steps: {summary['global_step']} (seed" in body
    for key in ("val/bits_per_base", "test/bits_per_base", "val/baseline/markov_causal_bits_per_base"):
        assert f"| {key} | {summary[key]:.4f} |" in body, key
    assert "python -m bigbird_dna.train debug=fast data.fasta=lambda_phage.fa" in body
    assert "| 2 | 32 |" in body  # layers, hidden of debug=fast


def test_save_pretrained_makes_an_old_export_transformers_loadable(tmp_path, hf_tokenizer):
    """An export from before this change (model.pt, no auto_map, an absolute source_checkpoint)."""
    module = tiny_module("promoter", hf_tokenizer)
    run_dir = tmp_path / "old_run"
    old = write_export(run_dir / "export", "promoter", module.state_dict(), module.config.to_dict(), hf_tokenizer,
                       task_config=task_config("promoter", module),
                       metadata={"source_checkpoint": str(run_dir / "checkpoints" / "best.ckpt")})
    config = json.loads((old / "config.json").read_text())
    assert "auto_map" not in config and (old / "model.pt").is_file()
    ours = BigBirdDNA.from_pretrained(old, device="cpu", precision="fp32")
    saved = ours.save_pretrained(tmp_path / "shared")
    metadata = json.loads((saved / "config.json").read_text())["metadata"]
    assert metadata["source_checkpoint"] == "checkpoints/best.ckpt"
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(saved, trust_remote_code=True)
    ids, mask = ours.encode(windows(2, 400))
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=ids, attention_mask=mask).logits, ours.module(ids, mask),
                                   atol=1e-5, rtol=0)
