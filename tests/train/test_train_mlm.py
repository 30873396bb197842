"""End-to-end MLM pretraining: every FASTA flavour, outputs, resume and exports."""

from __future__ import annotations

import gzip
import json
import shutil

import pytest
import torch
from Bio import bgzf

from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import load_export
from tests.conftest import FAST_OVERRIDES, LAMBDA, run_cli


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))


def _lambda_seq() -> str:
    return "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])


def _write(path, records: dict[str, str], width=60):
    with open(path, "w") as out:
        for name, seq in records.items():
            out.write(f">{name}\n" + "".join(seq[i:i + width] + "\n" for i in range(0, len(seq), width)))
    return path


def _flavour(tmp_path, kind: str):
    if kind == "plain":
        return LAMBDA
    if kind == "gzip":
        target = tmp_path / "lambda.fa.gz"
        with open(LAMBDA, "rb") as src, gzip.open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return target
    target = tmp_path / "lambda.bgz.fa.gz"
    with open(LAMBDA, "rb") as src, bgzf.BgzfWriter(str(target), "wb") as dst:
        dst.write(src.read())
    return target


@pytest.mark.parametrize("kind", ["plain", "gzip", "bgzip"])
def test_train_cli_runs_on_plain_gzip_and_bgzip_fasta(tmp_path, kind):
    fasta = _flavour(tmp_path, kind)
    run_dir = tmp_path / "run"
    result = run_cli("bigbird_dna.train", f"data.fasta={fasta}", f"hydra.run.dir={run_dir}", *FAST_OVERRIDES,
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "MLM pretraining finished" in result.stdout
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["global_step"] == 4
    assert (run_dir / "checkpoints" / "last.ckpt").is_file()
    assert (run_dir / "export" / "model.safetensors").is_file()
    if kind == "gzip":  # decompressed once into the cache, never beside the input
        assert list((tmp_path / "cache").glob("*.fa"))


def test_train_on_multi_record_soft_masked_genome_with_n_runs(tmp_path, train_in_process):
    seq = _lambda_seq()
    chr_a = seq[:16000]
    chr_a = chr_a[:2000] + chr_a[2000:5000].lower() + "N" * 3000 + chr_a[8000:]
    records = {"chrA": chr_a, "chrB": seq[16000:32000], "chrC": seq[32000:]}
    fasta = _write(tmp_path / "toy.fa", records)
    summary, run_dir = train_in_process(f"data.fasta={fasta}", "data.val_records=[chrB]",
                                        "data.test_records=[chrC]")
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    text = json.dumps(manifest)
    assert "chrB" in text and "chrC" in text
    assert summary["global_step"] == 4
    assert summary["val/loss"] > 0


def test_run_writes_config_manifest_tokenizer_checkpoints_export(train_in_process):
    summary, run_dir = train_in_process(f"data.fasta={LAMBDA}")
    for name in ("config.yaml", "split_manifest.json", "tokenizer.json", "summary.json",
                 "checkpoints/last.ckpt", "logs/version_0/metrics.csv", "export/model.safetensors",
                 "export/config.json", "export/tokenizer.json", "export/README.md", "export/modeling_bigbird_dna.py"):
        assert (run_dir / name).is_file(), name
    # Checkpoints hold plain types only: a weights_only load works and carries the tokenizer.
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert ckpt["global_step"] == 4
    assert json.loads(ckpt["tokenizer_json"]) == json.loads((run_dir / "tokenizer.json").read_text())
    assert isinstance(ckpt["hyper_parameters"]["model"], dict)


def test_export_reloads_with_the_exact_attention_layouts(train_in_process):
    _, run_dir = train_in_process(f"data.fasta={LAMBDA}")
    export = load_export(run_dir / "export", task="mlm")
    config = EncoderConfig.from_dict(export.model_config)
    encoder = BigBirdEncoder(config)
    encoder_state = {k.removeprefix("encoder."): v for k, v in export.state_dict.items() if k.startswith("encoder.")}
    encoder.load_state_dict(encoder_state)
    saved = export.state_dict["encoder._extra_state"]["layouts"]
    assert saved, "the export must carry the layouts the model trained with"
    for key, tables in saved.items():
        layer, blocks = map(int, key.split("/"))
        assert torch.equal(encoder.layouts.get(layer, blocks, torch.device("cpu")).kv_idx, tables["kv_idx"])
    ids = torch.tensor([export.tokenizer.encode("ACGT" * 200)[:200]])
    encoder.eval()
    assert torch.isfinite(encoder(ids)).all()


def test_resume_from_last_checkpoint_continues_at_the_same_step(tmp_path, train_in_process):
    first, first_dir = train_in_process(f"data.fasta={LAMBDA}", run_dir=tmp_path / "first")
    last = first_dir / "checkpoints" / "last.ckpt"
    resumed, resumed_dir = train_in_process(f"data.fasta={LAMBDA}", f"ckpt_path={last}", "trainer.max_steps=8",
                                            run_dir=tmp_path / "second")
    assert resumed["global_step"] == 8
    metrics = (resumed_dir / "logs" / "version_0" / "metrics.csv").read_text().splitlines()
    header = metrics[0].split(",")
    logged_steps = sorted({int(line.split(",")[header.index("step")]) for line in metrics[1:]})
    assert min(logged_steps) >= 4, f"the resumed run restarted from step {min(logged_steps)}"
    # The resumed run kept the tokenizer of the checkpoint it came from.
    assert (resumed_dir / "tokenizer.json").read_text() == (first_dir / "tokenizer.json").read_text()


def test_resume_with_last_in_place(tmp_path, train_in_process):
    run_dir = tmp_path / "in_place"
    train_in_process(f"data.fasta={LAMBDA}", run_dir=run_dir)
    summary, _ = train_in_process(f"data.fasta={LAMBDA}", "ckpt_path=last", "trainer.max_steps=6", run_dir=run_dir)
    assert summary["global_step"] == 6
    # The first leg's metrics survive the second.
    assert (run_dir / "logs" / "version_0" / "metrics.csv").is_file()
    assert (run_dir / "logs" / "version_1" / "metrics.csv").is_file()


def test_pretraining_continues_from_an_mlm_export_on_short_records(tmp_path, train_in_process, capsys):
    """Task-adaptive pretraining: a genome MLM's export, continued on many short records (a task's own
    sequences, held out whole by record). The encoder config, tokenizer and every weight, the MLM head
    included, come from the export."""
    _, first_dir = train_in_process(f"data.fasta={LAMBDA}", "model.hidden_size=48", run_dir=tmp_path / "genome")
    backbone = first_dir / "export"
    seq = _lambda_seq()
    records = _write(tmp_path / "task.fa", {f"w{i}": seq[i * 300:(i + 1) * 300] for i in range(40)})
    capsys.readouterr()
    summary, run_dir = train_in_process(f"data.fasta={records}", "data.window_bp=300", "data.holdout_records=0.1",
                                        f"task.backbone={backbone}", "trainer.max_steps=0", run_dir=tmp_path / "task")
    out = capsys.readouterr().out
    assert "loaded" in out and "missing keys: none; unexpected keys: none; its head taken over too" in out
    exported, given = load_export(run_dir / "export", task="mlm"), load_export(backbone, task="mlm")
    assert exported.model_config["hidden_size"] == 48, "the encoder config comes from the backbone"
    assert exported.tokenizer.sha256 == given.tokenizer.sha256
    assert summary["global_step"] == 0
    for key, value in given.state_dict.items():  # no step taken: the export is the backbone, head and all
        if torch.is_tensor(value):
            assert torch.equal(exported.state_dict[key], value), key
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert {len(manifest["splits"][s]["regions"]) for s in ("val", "test")} == {4}
    continued, _ = train_in_process(f"data.fasta={records}", "data.window_bp=300", "data.holdout_records=0.1",
                                    f"task.backbone={backbone}", run_dir=tmp_path / "task4")
    assert continued["global_step"] == 4 and continued["val/bits_per_base"] > 0


def test_continued_pretraining_resumes_after_its_backbone_export_has_gone(tmp_path, train_in_process):
    """A resumed run takes its encoder config and weights from the checkpoint: the export it
    started from (task.backbone) is not read again, so it may be moved or deleted meanwhile."""
    _, genome_dir = train_in_process(f"data.fasta={LAMBDA}", "model.hidden_size=48", run_dir=tmp_path / "genome")
    backbone = tmp_path / "backbone"
    shutil.copytree(genome_dir / "export", backbone)
    _, continued_dir = train_in_process(f"data.fasta={LAMBDA}", f"task.backbone={backbone}",
                                        run_dir=tmp_path / "continued")
    shutil.rmtree(backbone)
    resumed, resumed_dir = train_in_process(f"data.fasta={LAMBDA}", f"task.backbone={backbone}",
                                            f"ckpt_path={continued_dir / 'checkpoints' / 'last.ckpt'}",
                                            "trainer.max_steps=6", run_dir=tmp_path / "resumed")
    assert resumed["global_step"] == 6
    assert load_export(resumed_dir / "export", task="mlm").model_config["hidden_size"] == 48, \
        "the backbone's encoder config, from the checkpoint"
