"""``python -m bigbird_dna.train task=promoter``: both data paths, fine-tuning from an MLM export,
and a planted signal that the model must learn."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from bigbird_dna.data.promoter.datamodule import EpdnewPromoterData
from bigbird_dna.demo.synthetic_promoters import (
    ELEMENT,
    plant_promoters,
    planted_sequences,
)
from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.export import load_export
from bigbird_dna.tasks.backbone import load_backbone
from bigbird_dna.tokenizer import DNATokenizer
from tests.conftest import LAMBDA, compose, run_cli
from tests.promoter.conftest import PROMOTER_FAST, lambda_seq, make_export, write_fasta

EPDNEW = ["task=promoter", "data=promoter_epdnew", "data.upstream_bp=300", "data.downstream_bp=200",
          "data.batch_size=8", "data.num_workers=0"]


@pytest.fixture
def train(tmp_path):
    from bigbird_dna.train import run

    def _train(*overrides, run_dir=None):
        run_dir = run_dir or tmp_path / "run"
        return run(compose([*PROMOTER_FAST, *overrides], run_dir)), run_dir

    return _train


@pytest.fixture
def three_chromosomes(tmp_path):
    """lambda cut into chrA/chrB/chrC with planted promoters, and their EPDnew-style BED."""
    seq = lambda_seq()
    genome = write_fasta(tmp_path / "toy.fa", {"chrA": seq[:16000], "chrB": seq[16000:32000], "chrC": seq[32000:]})
    return plant_promoters(genome, tmp_path / "planted", num=36, margin_bp=800, seed=3)


def test_epdnew_path_trains_with_chromosome_holdout_and_exports(three_chromosomes, train):
    fasta, bed = three_chromosomes
    summary, run_dir = train(*EPDNEW, f"data.fasta={fasta}", f"data.bed={bed}", "data.val_records=[chrB]",
                             "data.test_records=[chrC]", "data.negatives.mode=shuffle",
                             "data.negatives.random_genomic=0.5", "data.negatives.min_tss_distance_bp=300")
    assert summary["task"] == "promoter" and summary["global_step"] == 4
    for metric in ("val/loss", "val/f1", "val/auroc", "val/auprc", "val/mcc"):
        assert np.isfinite(summary[metric]), metric
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert [r["record"] for r in manifest["splits"]["val"]["regions"]] == ["chrB"]
    samples = manifest["samples"]
    for split in ("train", "val", "test"):
        positives = samples[split]["positives"]
        assert positives > 0 and samples[split]["negatives"] == positives + round(0.5 * positives)
    export = load_export(run_dir / "export", task="promoter")
    assert export.state_dict["head.out.weight"].shape == (1, 64)  # mean_max pooling: mean and max of 32 channels
    ckpt = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True)
    assert ckpt["hyper_parameters"]["num_labels"] == 1 and ckpt["tokenizer_json"]


def test_epdnew_items_are_strand_aware_with_derived_negatives(tmp_path):
    fasta, bed = plant_promoters(LAMBDA, tmp_path / "planted", num=20, margin_bp=700, seed=1)
    data = {"fasta": str(fasta), "bed": str(bed), "upstream_bp": 300, "downstream_bp": 200,
            "skip_out_of_bounds": False, "train_records": None, "val_records": [], "test_records": [],
            "holdout_fraction": 0.2, "max_n_fraction": 0.1, "batch_size": 4, "num_workers": 0,
            "negatives": {"deepromoter": 1, "mode": "substitute", "num_chunks": 20, "num_kept": 8,
                          "random_genomic": 0.0, "min_tss_distance_bp": 1000}}
    module = EpdnewPromoterData(seed=0, run_dir=tmp_path / "run", **data)
    train = module.datasets["train"]
    positives = [i for i, s in enumerate(train.samples) if s.label == 1.0]
    strands = set()
    for i in positives:
        seq, label = train[i]
        strands.add(train.samples[i].window.strand)
        assert label.tolist() == [1.0] and len(seq) == 500
        assert seq[300 - 35:300 - 6] == ELEMENT  # planted at TSS-35..TSS-7 on either strand
    assert strands == {"+", "-"}
    negatives = [i for i, s in enumerate(train.samples) if s.derived]
    assert len(negatives) == len(positives)
    seq, label = train[negatives[0]]
    assert label.tolist() == [0.0] and len(seq) == 500 and train[negatives[0]][0] == seq  # reproducible
    positive = train.samples[negatives[0]].window.read(module.genome)
    assert sum(a == b for a, b in zip(seq, positive)) < 0.7 * len(seq)  # 12 of 20 chunks redrawn


def test_a_bed_contig_missing_from_the_fasta_fails_the_cli_cleanly(tmp_path):
    bed = tmp_path / "p.bed"
    bed.write_text("chr1\t1000\t1060\tGENE_1\t900\t+\n")
    result = run_cli("bigbird_dna.train", *EPDNEW, *PROMOTER_FAST, f"data.fasta={LAMBDA}", f"data.bed={bed}",
                     f"hydra.run.dir={tmp_path / 'run'}", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "contig 'chr1'" in result.stderr and "not in the genome FASTA" in result.stderr
    assert not (tmp_path / "run" / "export").exists()


def test_fine_tuning_from_an_mlm_export_reports_keys_and_keeps_its_tokenizer(tmp_path, tiny_tokenizer, train,
                                                                            capsys):
    backbone = make_export(tmp_path / "mlm_export", "mlm", tiny_tokenizer)
    pos = write_fasta(tmp_path / "pos.fa", {f"p{i}": s for i, s in enumerate(planted_sequences(24, 120, 100)[0])})
    neg = write_fasta(tmp_path / "neg.fa.gz", {f"n{i}": lambda_seq()[i * 90:(i + 1) * 90 - i] for i in range(24)})
    summary, run_dir = train("task=promoter", "data=promoter_labelled", f"data.train={{1: '{pos}', 0: '{neg}'}}",
                             "data.val_fraction=0.25", f"task.backbone={backbone}", "model.hidden_size=64",
                             "task.encoder_dropout=0.25")
    out = capsys.readouterr().out
    assert "missing keys: none; unexpected keys: none" in out and "(the mlm head) not used" in out
    assert DNATokenizer.load(run_dir / "tokenizer.json").sha256 == load_export(backbone).tokenizer.sha256
    export = load_export(run_dir / "export", task="promoter")
    assert export.model_config["hidden_size"] == 32, "the encoder config comes from the backbone"
    assert load_export(backbone).model_config["dropout"] != 0.25 and export.model_config["dropout"] == 0.25
    assert summary["global_step"] == 4
    origin = export.metadata["training"]["backbone"]
    assert origin["path"] == f"{backbone.parent.name}/mlm_export" and origin["task"] == "mlm"  # not just "export"
    assert f"Fine-tuned from `{origin['path']}`, a `mlm` model" in (run_dir / "export" / "README.md").read_text()


def test_encoder_dropout_auto_is_0_from_scratch_and_keeps_a_backbones_own(tmp_path, tiny_tokenizer, capsys):
    """The labelled default: a backbone fine-tunes with its pretraining dropout, which measured better
    than none (docs/metrics.md); from scratch, none. The hyperparameters record what was built."""
    from bigbird_dna.tasks.promoter import PromoterTask

    backbone = make_export(tmp_path / "mlm_export", "mlm", tiny_tokenizer, dropout=0.15)
    model = load_export(backbone).model_config
    tuned = PromoterTask(model, {}, num_labels=1, backbone=str(backbone), encoder_dropout="auto")
    assert "encoder dropout while fine-tuning: 0.15 (the backbone's own)" in capsys.readouterr().out
    assert tuned.config.dropout == 0.15 and tuned.hparams.encoder_dropout is None
    assert {m.p for m in tuned.encoder.modules() if isinstance(m, torch.nn.Dropout)} == {0.15}
    scratch = PromoterTask(model, {}, num_labels=1, encoder_dropout="auto")
    assert scratch.config.dropout == 0.0 and scratch.hparams.encoder_dropout == 0.0
    with pytest.raises(InputError, match="task.encoder_dropout='sometimes'.*auto"):
        PromoterTask(model, {}, num_labels=1, encoder_dropout="sometimes")


def test_load_backbone_lists_missing_keys_and_refuses_other_shapes(tmp_path, tiny_tokenizer):
    backbone = make_export(tmp_path / "mlm_export", "mlm", tiny_tokenizer)
    state = torch.load(backbone / "model.pt", weights_only=True)
    layouts = state["encoder._extra_state"]["layouts"]
    assert layouts, "the backbone pinned a layout"
    del state["encoder.final_norm.bias"]
    torch.save(state, backbone / "model.pt")
    config = EncoderConfig.from_dict(load_export(backbone).model_config)
    encoder = BigBirdEncoder(config)
    missing, unexpected = load_backbone(encoder, backbone)
    assert missing == ["encoder.final_norm.bias"] and unexpected == []
    assert torch.equal(encoder.token_embedding.weight, state["encoder.token_embedding.weight"])
    assert set(encoder.layouts.state_dict()) == set(layouts)
    bigger = BigBirdEncoder(EncoderConfig.from_dict({**load_export(backbone).model_config, "hidden_size": 64}))
    with pytest.raises(InputError, match="does not fit this encoder"):
        load_backbone(bigger, backbone)


def test_the_model_learns_a_planted_promoter_signal(tmp_path, train):
    """Positives: AT-rich background + the tac core at TSS-35; negatives: DeePromoter-substituted
    positives and element-free backgrounds. The real validation AUROC must reach 0.9."""
    seqs, labels = planted_sequences(400, 240, 200, seed=1)
    table = tmp_path / "planted.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in zip(seqs, labels)))
    summary, _ = train("task=promoter", "data=promoter_labelled", f"data.train={table}", "data.val_fraction=0.25",
                       "data.batch_size=16", "trainer.max_steps=150", "trainer.val_check_interval=75",
                       "trainer.check_val_every_n_epoch=null")
    print(f"planted-signal validation AUROC {summary['val/auroc']:.4f}")
    assert summary["val/auroc"] >= 0.9, summary
