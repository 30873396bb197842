"""A NaN or infinite training loss stops the run at once, naming the step, before the bad update."""

from __future__ import annotations

import json

import pytest
import torch

from bigbird_dna.training.faults import EXIT_NONFINITE, NonFiniteLossError
from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli

POISON = "+callbacks.poison._target_=tests.faults.callbacks.PoisonHeadBias"


@pytest.mark.slow
@pytest.mark.parametrize("fused", [False, True])
def test_nan_loss_stops_the_cli_with_one_clear_line_and_keeps_the_last_good_checkpoint(tmp_path, fused):
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", *FAST_OVERRIDES, f"data.fasta={LAMBDA}",
                     "trainer.max_steps=6", POISON, "+callbacks.poison.step=2", "+callbacks.poison.value=nan",
                     f"optim.fused={fused}",
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}, timeout=300)
    assert result.returncode == EXIT_NONFINITE, result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr[-3000:]
    assert "train loss is nan at global step 2" in errors[0] and "last.ckpt" in errors[0], errors[0]
    assert not (run_dir / "summary.json").exists() and not (run_dir / "export").exists()
    last = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert last["global_step"] == 2  # validation at step 2 saved it, before the loss went bad
    assert all(torch.isfinite(v).all() for v in last["state_dict"].values() if isinstance(v, torch.Tensor))


@pytest.mark.parametrize("fused", [False, True])
def test_infinite_loss_stops_training_before_the_update(train_in_process, tmp_path, monkeypatch, fused):
    """For-each AdamW: the loss is checked at once. Fused AdamW: without a sync, the flag makes the
    kernel skip the update, and the stop comes as the next step starts; the encoder is the same
    after the bad step as before it (an applied update from inf gradients would make it NaN)."""
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    sums = tmp_path / "sums.jsonl"
    with pytest.raises(NonFiniteLossError, match=r"train loss is inf at global step 1 \(epoch 0, batch 2\)"):
        train_in_process(f"data.fasta={LAMBDA}", "trainer.val_check_interval=4", POISON,
                         "+callbacks.poison.step=1", "+callbacks.poison.value=inf", f"optim.fused={fused}",
                         "+callbacks.sums._target_=tests.faults.callbacks.RecordEncoderSum",
                         f"+callbacks.sums.path={sums}")
    after = [json.loads(line) for line in sums.read_text().splitlines()] if sums.exists() else []
    if fused:  # the bad step ran to its end, with its update skipped
        assert [r["step"] for r in after] == [1, 2]
        assert after[1]["sum"] == after[0]["sum"]
    else:  # stopped before backward
        assert [r["step"] for r in after] == [1]
