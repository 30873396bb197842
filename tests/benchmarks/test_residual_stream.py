"""benchmarks/residual_stream.py: what it calls constant and content, and that reading them does
not change the run it reads."""

from __future__ import annotations

import json

import pytest
import torch

from benchmarks.residual_stream import stream_parts
from tests.model.test_composition_fit import gc_labelled  # noqa: F401 (a fixture)
from tests.training.test_weight_averaging import SCHEDULE


def test_the_constant_is_the_part_shared_by_every_sequence_and_position_and_the_content_the_rest():
    torch.manual_seed(0)
    shared = torch.zeros(16)
    shared[0] = 30.0
    content = torch.randn(64, 50, 16)
    content -= content.mean((0, 1))
    parts = stream_parts(shared + content)
    assert parts["constant"] == pytest.approx(30.0, abs=1e-3)
    assert parts["content"] == pytest.approx(float(content.square().sum(-1).mean().sqrt()), rel=1e-4)
    # a collapsed stream: the same vector everywhere has no content at all
    assert stream_parts(shared.expand(8, 5, 16))["content"] == pytest.approx(0.0, abs=1e-5)


def test_records_come_at_the_asked_steps_the_run_stops_after_the_last_and_trains_as_without_them(
        gc_labelled, train_in_process, tmp_path):  # noqa: F811
    def stopped_run(name: str, at: list[int]):
        records = tmp_path / f"{name}.json"
        summary, _ = train_in_process(
            *SCHEDULE, f"data.train={gc_labelled}", "tokenizer=char", "seed=3",
            "+callbacks.residual_stream._target_=benchmarks.residual_stream.ResidualStream",
            f"+callbacks.residual_stream.out={records}", f"+callbacks.residual_stream.at=[{','.join(map(str, at))}]",
            "+callbacks.residual_stream.rows=16", run_dir=tmp_path / name)
        state = torch.load(summary["last_checkpoint"], map_location="cpu", weights_only=False)["state_dict"]
        return summary, json.loads(records.read_text()), state

    summary, records, state = stopped_run("read", [0, 1, 3])
    assert summary["global_step"] == 3 and [r["step"] for r in records] == [0, 1, 3]
    first = records[0]
    assert set(first["stream"]) == {"embed_norm", "layer0", "layer1", "final_norm"}
    assert all(part["constant"] > 0 and part["content"] > 0 for part in first["stream"].values())
    assert first["pooled_sd_median"] > 0 and first["network_logit_sd"] > 0
    # the same seed read only at its last step: the same weights and batch-norm statistics, so the
    # readings at steps 0 and 1 neither drew from the RNG nor moved the running statistics
    _, _, unread = stopped_run("unread", [3])
    assert state.keys() == unread.keys()
    for key, value in state.items():
        if torch.is_tensor(value):  # not the layouts' extra state, a dict
            assert torch.equal(value, unread[key]), key
