"""``model=hybrid_tiny`` trains end to end: MLM on windows longer than its BigBird positions (the
stem pools 4 bases into each), resume from its checkpoint, and a labelled task."""

from __future__ import annotations

import json

import torch

from bigbird_dna.model.export import load_export
from bigbird_dna.model.networks import network_from_export
from tests.classify.conftest import TINY, mapping, planted, write_fasta_per_class
from tests.conftest import LAMBDA

# debug=fast shrinks the encoder to 32 wide over 256 positions; with the stem's pool of 4 those read
# (256 - 2) * 4 = 1016 bases, so 600-bp windows are whole, not cut at 254.
HYBRID = ["model=hybrid_tiny", "tokenizer=char", "model.stem.channels=16", "data.window_bp=600",
          f"data.fasta={LAMBDA}"]


def test_mlm_trains_on_windows_longer_than_its_positions_and_resumes(tmp_path, train_in_process):
    first, first_dir = train_in_process(*HYBRID, run_dir=tmp_path / "first")
    assert first["global_step"] == 4 and torch.isfinite(torch.tensor(first["val/bits_per_base"]))
    export = load_export(first_dir / "export")
    assert export.model_config["stem"] == {"kernel": 15, "channels": 16, "blocks": 1, "pool": 4}
    assert export.task_config["predict_window_bp"] == 600  # the training windows were not cut
    assert json.loads((first_dir / "export" / "tokenizer_config.json").read_text())["model_max_length"] == 1018

    resumed, _ = train_in_process(*HYBRID, f"ckpt_path={first_dir / 'checkpoints' / 'last.ckpt'}",
                                  "trainer.max_steps=6", run_dir=tmp_path / "second")
    assert resumed["global_step"] == 6
    module = network_from_export(load_export(tmp_path / "second" / "export"))
    assert module.encoder.stem is not None and module.encoder.stem.decoder is not None


def test_a_labelled_task_trains_with_a_cls_head_on_the_stem(tmp_path, train_in_process):
    files = write_fasta_per_class(tmp_path / "fa", planted(16, seed=0))
    summary, run_dir = train_in_process(
        "task=classify", "data=classify", f"data.train={mapping(files)}", *TINY, "model=hybrid_tiny",
        "model.stem.channels=16", "data.baselines.enabled=false", "data.batch_size=8", "data.val_fraction=0.25",
        "task.head.pooling=cls", "trainer.max_steps=3", "trainer.val_check_interval=3",
        "trainer.check_val_every_n_epoch=null", run_dir=tmp_path / "classify")
    assert summary["global_step"] == 3 and 0.0 <= summary["val/accuracy"] <= 1.0
    assert load_export(run_dir / "export").model_config["stem"]["pool"] == 4
