"""The model card: Hub YAML header, model facts from config.json, metrics, and portable paths."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from bigbird_dna.model.model_card import count_parameters, portable, portable_tree, render_card
from bigbird_dna.training.export_record import training_record

MODEL = {"vocab_size": 10, "hidden_size": 8, "num_layers": 2, "num_heads": 2, "intermediate_size": 16,
         "max_positions": 64, "position": "rope", "conv_kernel": 0,
         "attention": {"preset": "bigbird_itc", "block_size": 16, "seed": 7,
                       "params": {"window": 3, "num_random": 2, "global_per_end": 1}}}


def _header(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n", 2)[1])


def test_portable_keeps_run_paths_relative_and_cuts_others_to_names(tmp_path):
    run_dir = tmp_path / "run"
    text = f"data.fasta={tmp_path}/genomes/hg38.fa task.backbone={run_dir}/export ckpt={run_dir}/checkpoints/last.ckpt"
    assert portable(text, run_dir) == "data.fasta=hg38.fa task.backbone=export ckpt=checkpoints/last.ckpt"
    assert portable("val/bits_per_base a/b.fa 3/4", run_dir) == "val/bits_per_base a/b.fa 3/4"
    nested = portable_tree({"files": [f"{tmp_path}/a.fa", 3], "x": {"y": f"{run_dir}/z"}}, run_dir)
    assert nested == {"files": ["a.fa", 3], "x": {"y": "z"}}


def test_count_parameters_counts_a_tied_weight_once():
    embedding = torch.zeros(10, 8)
    state = {"encoder.token_embedding.weight": embedding, "head.embedding.weight": embedding,
             "head.bias": torch.zeros(10), "layout": torch.zeros(5, dtype=torch.int32)}
    assert count_parameters(state) == 90


@pytest.mark.parametrize("task,state,tag", [("mlm", {"head.bias": torch.zeros(10)}, "fill-mask"),
                                            ("promoter", {"head.out.weight": torch.zeros(1, 8)},
                                             "text-classification")])
def test_card_header_is_hub_yaml_with_the_pipeline_of_the_head(task, state, tag):
    header = _header(render_card({"task": task, "model": MODEL, "task_config": {}, "metadata": {}}, state))
    assert header["pipeline_tag"] == tag and header["library_name"] == "transformers"
    assert {"dna", "genomics", "bigbird", task} <= set(header["tags"]) and header["license"] == "other"


def test_card_states_shape_layout_and_metrics_with_baselines():
    metadata = {"seed": 3, "training": {"steps": 500, "tokenizer": {"kind": "bpe"}, "command": "python -m x a=b",
                                        "fasta": {"name": "g.fa", "bp": 1000, "records": 2,
                                                  "split_bp": {"train": 900, "val": 50, "test": 50}},
                                        "metrics": {"val/bits_per_base": 1.91234,
                                                    "val/baseline/markov_causal_bits_per_base": 1.95,
                                                    "val/baseline/scored_bases": 4768}}}
    card = render_card({"task": "mlm", "model": MODEL, "task_config": {}, "metadata": metadata},
                       {"w": torch.zeros(4, 5)})
    assert "| 2 | 8 | 2 | 16 | 20 | 64 | rope | 0 |" in card
    assert "preset `bigbird_itc`, block size 16 tokens, global_per_end=1, num_random=2, window=3" in card
    assert "`g.fa`, 1,000 bp in 2 record(s) (train 900 bp, val 50 bp, test 50 bp)" in card
    assert "- Steps: 500 (seed 3)" in card and "- Tokenizer: bpe, 10 tokens" in card
    rows = [line for line in card.splitlines() if line.startswith("| val/")]
    assert rows == ["| val/bits_per_base | 1.9123 |", "| val/baseline/markov_causal_bits_per_base | 1.9500 |",
                    "| val/baseline/scored_bases | 4,768 |"]
    assert "```\npython -m x a=b\n```" in card


def test_card_without_a_training_record_says_so():
    card = render_card({"task": "mlm", "model": MODEL, "task_config": {}, "metadata": {}}, {})
    assert "were not recorded" in card and "No metrics were recorded" in card and "## Command" not in card


def test_a_manifest_without_splits_names_the_genome_without_split_sizes(tmp_path):
    """Chromatin-interval runs write a split manifest naming only the FASTA (no per-split regions)."""
    (tmp_path / "g.fa").write_text(">a\nACGTACGTAC\n>b\nACGTA\n")
    (tmp_path / "split_manifest.json").write_text(json.dumps({"fasta": str(tmp_path / "g.fa")}))
    record = training_record({"fasta": str(tmp_path / "g.fa")}, {"kind": "char"}, {"global_step": 4}, [], tmp_path)
    assert record["fasta"] == {"name": "g.fa", "bp": 15, "records": 2}
    card = render_card({"task": "mlm", "model": MODEL, "task_config": {}, "metadata": {"training": record}},
                       {"w": torch.zeros(4, 5)})
    assert "- Genome: `g.fa`, 15 bp in 2 record(s)\n" in card
