"""A resume reads what it needs of a checkpoint (its step, hyperparameters, tokenizer) without
loading the weights and optimizer state: :func:`checkpoint_entry` maps the file instead."""

from __future__ import annotations

import torch

from bigbird_dna.training.checkpoint_io import AtomicCheckpointIO, checkpoint_entry


def test_an_entry_is_read_as_saved_and_a_missing_one_gives_the_default(tmp_path):
    path = tmp_path / "last.ckpt"
    weights = torch.arange(1_000_000, dtype=torch.float32)
    AtomicCheckpointIO().save_checkpoint({"global_step": 42, "hyper_parameters": {"model": {"hidden_size": 8}},
                                          "tokenizer_json": '{"kind": "char"}', "state_dict": {"w": weights}}, path)
    assert checkpoint_entry(path, "global_step") == 42
    assert checkpoint_entry(path, "hyper_parameters") == {"model": {"hidden_size": 8}}
    assert checkpoint_entry(path, "tokenizer_json") == '{"kind": "char"}'
    assert checkpoint_entry(path, "epoch", 0) == 0 and checkpoint_entry(path, "epoch") is None
    # the tensors come back memory-mapped, not copied: they read as saved
    assert torch.equal(checkpoint_entry(path, "state_dict")["w"], weights)
