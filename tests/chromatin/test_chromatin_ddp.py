"""Two DDP ranks on CPU (gloo): evaluation gathers every rank's rows, puts them back in file order by
index, averages the strand pairs, and so reports what one process reports for the same weights."""

from __future__ import annotations

import json

import lightning as L
import pytest

from bigbird_dna.model.export import load_export
from bigbird_dna.training.assembly import build
from tests.chromatin.test_train_chromatin import TINY
from tests.conftest import compose, run_cli

pytestmark = pytest.mark.slow


def test_ddp_validation_matches_one_process_on_the_same_weights(planted_bundle, tmp_path):
    run_dir = tmp_path / "run"
    overrides = ["task=chromatin", "data=deepsea", f"data.dir={planted_bundle}", "data.batch_size=8",
                 "data.chunk_size=64", "tokenizer.sample_bp=100000", "trainer.max_steps=4",
                 "trainer.val_check_interval=4", *TINY]
    result = run_cli("bigbird_dna.train", *overrides, "trainer.accelerator=cpu", "trainer.devices=2",
                     "trainer.strategy=ddp", f"hydra.run.dir={run_dir}", timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    ddp = json.loads((run_dir / "summary.json").read_text())

    single_dir = tmp_path / "single"
    single_dir.mkdir()
    (single_dir / "tokenizer.json").write_text((run_dir / "tokenizer.json").read_text())
    module, datamodule, _ = build(compose(overrides, single_dir), single_dir, True)
    module.load_state_dict(load_export(run_dir / "export").state_dict)
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    [single] = trainer.validate(module, datamodule=datamodule, verbose=False)
    for key in ("val/auroc_median", "val/auroc_dhs", "val/auroc_tf", "val/auroc_hm", "val/auprc_median",
                "val/labels_scored", "val/labels_no_positives", "val/loss"):
        assert ddp[key] == pytest.approx(single[key], abs=1e-4), key
