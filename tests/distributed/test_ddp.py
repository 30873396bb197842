"""Lightning DDP with 2 CPU processes on gloo, through the real CLI.

Lightning starts rank 1 by re-running the command. Checked: the ranks train on different windows
(their own shards), validation metrics are synced over both ranks (they equal a one-process
validation of the same weights on all the windows), only rank 0 writes the run's shared files,
and the effective batch size counts both ranks.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import lightning as L
import pytest
import torch
from omegaconf import OmegaConf

from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.tasks.mlm import MLMTask
from bigbird_dna.tokenizer import DNATokenizer
from tests.conftest import FAST_OVERRIDES, LAMBDA, REPO, run_cli

pytestmark = pytest.mark.slow

AUDIT = REPO / "tests" / "distributed" / "audit"  # a sitecustomize that records each process's writes


def _written(audit_dir: Path, run_dir: Path) -> dict[str, set[str]]:
    by_rank: dict[str, set[str]] = {}
    for record in map(json.loads, (p.read_text() for p in audit_dir.glob("*.json"))):
        inside = {str(Path(p).relative_to(run_dir)) for p in record["written"] if p.startswith(f"{run_dir}/")}
        by_rank.setdefault(record["local_rank"], set()).update(inside)
    return by_rank


def _validate_on_one_process(run_dir: Path, checkpoint: str, tmp_path: Path) -> float:
    cfg = OmegaConf.load(run_dir / "config.yaml")
    data = {k: v for k, v in OmegaConf.to_container(cfg.data, resolve=True).items() if k != "_target_"}
    datamodule = GenomeMLMDataModule(**data, seed=cfg.seed, run_dir=tmp_path / "single", is_main_process=True)
    datamodule.attach_tokenizer(DNATokenizer.load(run_dir / "tokenizer.json"), cfg.model.max_positions)
    module = MLMTask.load_from_checkpoint(checkpoint, map_location="cpu")
    trainer = L.Trainer(accelerator="cpu", devices=1, logger=False, enable_progress_bar=False,
                        enable_model_summary=False)
    return trainer.validate(module, datamodule=datamodule, verbose=False)[0]["val/loss"]


def test_ddp_two_cpu_ranks_on_gloo(tmp_path, monkeypatch):
    run_dir, audit_dir, records = tmp_path / "run", tmp_path / "audit", tmp_path / "records"
    audit_dir.mkdir()
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", *FAST_OVERRIDES, f"data.fasta={LAMBDA}",
                     "trainer.accelerator=cpu", "trainer.devices=2", "trainer.strategy=ddp",
                     "+callbacks.record._target_=tests.faults.callbacks.RecordBatches",
                     f"+callbacks.record.folder={records}",
                     env={"BIGBIRD_AUDIT_DIR": str(audit_dir),
                          "PYTHONPATH": os.pathsep.join(filter(None, [str(AUDIT), os.environ.get("PYTHONPATH")]))},
                     timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["global_step"] == 4

    # Each rank trained on its own shard: rank r gets windows r, r + 2, r + 4, ... of the epoch.
    seen = {rank: [json.loads(line) for line in (records / f"rank{rank}.jsonl").read_text().splitlines()]
            for rank in (0, 1)}
    for rank, batches in seen.items():
        assert [b["step"] for b in batches] == [1, 2, 3, 4]
        assert [i for b in batches for i in b["index"]] == list(range(rank, 32, 2))
    windows = [{w for b in seen[rank] for w in b["windows"]} for rank in (0, 1)]
    assert len(windows[0]) == len(windows[1]) == 16 and len(windows[0] & windows[1]) <= 1

    # Validation metrics are synced: rank 0 reports the loss over both ranks' windows.
    single = _validate_on_one_process(run_dir, summary["best_checkpoint"], tmp_path)
    assert summary["val/loss"] == pytest.approx(single, rel=1e-4)

    # Only rank 0 writes the run's files; rank 1 writes its own Hydra log only.
    written = _written(audit_dir, run_dir)
    assert set(written) == {"0", "1"}
    for name in ("config.yaml", "split_manifest.json", "tokenizer.json", "summary.json", "checkpoints/last.ckpt",
                 "export", "logs/version_0/metrics.csv"):
        assert name in written["0"], name
    probes = {name for name in written["1"] if name.startswith(".write_test")}  # writability probe
    assert written["1"] - probes == {"train_ddp_process_1.log"}, written["1"]

    # The effective batch size counts both ranks, in the summary and in the logged hyperparameters.
    assert summary["effective_batch_size"] == 8 and summary["devices"] == 2
    hparams = OmegaConf.load(run_dir / "logs" / "version_0" / "hparams.yaml")
    assert hparams.effective_batch_size == 8


def test_local_multirun_with_ddp_runs_each_job_on_its_own_ranks(tmp_path, monkeypatch):
    """Lightning re-runs the command for rank 1: in a multirun that must be the job, not the sweep."""
    sweep = tmp_path / "sweep"
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    result = run_cli("bigbird_dna.train", "-m", "optim.lr=1e-4,3e-4", f"hydra.sweep.dir={sweep}", *FAST_OVERRIDES,
                     f"data.fasta={LAMBDA}", "trainer.accelerator=cpu", "trainer.devices=2", "trainer.strategy=ddp",
                     timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    for job, lr in (("0", 1e-4), ("1", 3e-4)):
        summary = json.loads((sweep / job / "summary.json").read_text())
        assert summary["global_step"] == 4 and summary["devices"] == 2
        assert OmegaConf.load(sweep / job / "config.yaml").optim.lr == lr
        assert (sweep / job / "train_ddp_process_1.log").is_file()  # its rank 1 ran in its own directory
    assert sorted(p.name for p in sweep.iterdir() if p.is_dir()) == ["0", "1"]


def test_ddp_trains_a_hybrid_cls_classifier_whose_every_parameter_is_used(tmp_path):
    """``model=hybrid_tiny`` (stem pooling 4 bases per token, upsampling path) behind a ``cls`` head
    on two gloo ranks: DDP refuses a parameter without a gradient, so this fails if any stem part
    does not shape the [CLS] logits, or if the network's read-out (task.network_readout), which
    does not train without a kept composition path, gets none."""
    from tests.classify.conftest import TINY, mapping, planted, write_fasta_per_class

    files = write_fasta_per_class(tmp_path / "fa", planted(16, seed=0))
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", "task=classify", "data=classify",
                     f"data.train={mapping(files)}", *TINY, "model=hybrid_tiny", "model.stem.channels=16",
                     "data.baselines.enabled=false", "data.batch_size=4", "data.val_fraction=0.25",
                     "task.head.pooling=cls", "task.network_readout=1.0",  # no path: the read-out times zero
                     "trainer.max_steps=3", "trainer.val_check_interval=3",
                     "trainer.check_val_every_n_epoch=null", "trainer.accelerator=cpu", "trainer.devices=2",
                     "trainer.strategy=ddp", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")}, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert json.loads((run_dir / "summary.json").read_text())["global_step"] == 3


def test_ddp_ranks_start_training_with_rank_0s_composition_fit(tmp_path):
    """Lambda windows labelled by GC share (the fit is kept: its LR scores GC exactly, the judge CNN
    less) on two gloo ranks: the fit, its judge and the broadcast of rank 0's fit run without a
    collective mismatch, and both ranks start training with the same kept fit (beside which the
    network's read-out trains)."""
    from tests.model.test_composition_fit import lambda_windows_by_gc
    from tests.training.test_weight_averaging import SCHEDULE

    run_dir, paths, table = tmp_path / "run", tmp_path / "paths", tmp_path / "gc.tsv"
    windows, labels = lambda_windows_by_gc()
    table.write_text("sequence\tlabel\n" + "".join(f"{w}\t{int(y)}\n" for w, y in zip(windows, labels)))
    result = run_cli("bigbird_dna.train", f"hydra.run.dir={run_dir}", *SCHEDULE, f"data.train={table}",
                     "data.batch_size=32", "tokenizer=char", "task.head.composition=3",
                     "task.head.composition_fit=first", "data.val_fraction=0.34", "data.baselines.enabled=true",
                     "trainer.max_epochs=1", "task.network_readout=1.0",  # a kept path: the read-out trains
                     "trainer.accelerator=cpu", "trainer.devices=2", "trainer.strategy=ddp",
                     "+callbacks.paths._target_=tests.faults.callbacks.RecordCompositionPath",
                     f"+callbacks.paths.folder={paths}", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")},
                     timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "at least the small CNN's" in (run_dir / "train.log").read_text()
    states = [torch.load(paths / f"rank{rank}.pt", weights_only=True) for rank in (0, 1)]
    assert bool(states[0]["fitted"]) and states[0]["weight"].abs().sum() > 0
    for name, value in states[0].items():
        assert torch.equal(states[1][name], value), name
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["baseline/cnn/seconds"] > 0 and summary["effective_batch_size"] == 64
