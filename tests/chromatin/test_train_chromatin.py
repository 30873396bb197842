"""End to end: ``train task=chromatin`` learns the planted signal from the DeepSEA layouts (v7.3
train, v5 valid), reports per-group medians with excluded labels counted, writes its per-label TSV
and PNG; ``predict`` writes profiles for FASTA and BED input; the intervals path trains too."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.model.export import load_export
from tests.chromatin.deepsea_files import MOTIFS, NO_POSITIVE_LABELS
from tests.conftest import compose, run_cli

# A 1-layer, 32-wide encoder over ~235 tokens per 1000-bp window; 128 steps of 16 windows (two
# epochs of the 1024 training rows), validated at steps 64 and 128.
TINY = ["model.hidden_size=32", "model.num_heads=2", "model.intermediate_size=64", "model.num_layers=1",
        "model.dropout=0.0", "task.head.dropout=0.0", "model.max_positions=256", "model.attention.block_size=16",
        "tokenizer=bpe", "tokenizer.vocab_size=1024", "tokenizer.max_token_length=16",
        "trainer.enable_model_summary=false",
        "data.num_workers=0", "data.baselines.enabled=false"]  # tests/baselines covers the baselines
PLANTED = ["task=chromatin", "data=deepsea", "data.batch_size=16", "data.chunk_size=64", "optim.lr=5e-3",
           "tokenizer.sample_bp=300000", "trainer.max_steps=128", "trainer.val_check_interval=64",
           "trainer.log_every_n_steps=8"]


@pytest.fixture(scope="module")
def trained(planted_bundle, tmp_path_factory):
    from bigbird_dna.train import run

    run_dir = tmp_path_factory.mktemp("chromatin_run")
    cfg = compose([*PLANTED, *TINY, f"data.dir={planted_bundle}"], run_dir)
    return run(cfg), run_dir


def test_a_tiny_model_learns_the_planted_signal_in_every_group(trained):
    summary, _ = trained
    medians = {g: round(summary[f"val/auroc_{g}"], 3) for g in ("dhs", "tf", "hm")}
    print(f"\ngroup median AUROC {medians}, overall {summary['val/auroc_median']:.3f}, "
          f"{summary['seconds']:.0f} s")
    assert min(medians.values()) >= 0.8, medians
    assert summary["global_step"] == 128
    assert summary["val/labels_scored"] == 919 - len(NO_POSITIVE_LABELS)
    assert summary["val/labels_no_positives"] == len(NO_POSITIVE_LABELS)


def test_the_run_writes_per_label_results_a_plot_and_an_export(trained):
    summary, run_dir = trained
    rows = (run_dir / "chromatin_val_labels.tsv").read_text().splitlines()
    assert len(rows) == 1 + 919
    excluded = [row.split("\t") for row in rows[1:] if row.endswith("NA\tNA")]
    assert [int(r[0]) for r in excluded] == list(NO_POSITIVE_LABELS) and all(r[3] == "0" for r in excluded)
    assert (run_dir / "chromatin_val_auroc.png").read_bytes()[:4] == b"\x89PNG"
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert manifest["train"]["format"] == "hdf5" and manifest["val"]["format"] == "mat5"
    assert manifest["val"]["strand_pairs"] == "halves" and manifest["test"]["strand_pairs"] == "interleaved"
    export = load_export(run_dir / "export", task="chromatin")
    assert export.task_config["predict_window_bp"] == 1000 and export.task_config["pos_weight"] == 8.0
    assert export.state_dict["head.out.weight"].shape[0] == 919


def test_trainer_test_averages_the_interleaved_strands_of_test_mat(trained, planted_bundle):
    import lightning as L

    from bigbird_dna.training.assembly import build

    _, run_dir = trained
    module, datamodule, _ = build(compose([*PLANTED, *TINY, f"data.dir={planted_bundle}"], run_dir), run_dir, True)
    module.load_state_dict(load_export(run_dir / "export").state_dict)
    trainer = L.Trainer(logger=False, enable_progress_bar=False, enable_model_summary=False)
    [metrics] = trainer.test(module, datamodule=datamodule, verbose=False)
    assert metrics["test/auroc_median"] >= 0.8 and metrics["test/labels_no_positives"] >= len(NO_POSITIVE_LABELS)
    rows = (run_dir / "chromatin_test_labels.tsv").read_text().splitlines()
    assert sum(int(row.split("\t")[3]) + int(row.split("\t")[4]) for row in rows[1:2]) == 32  # one row per window


def _genome(tmp_path) -> tuple[str, dict[str, str]]:
    rng = np.random.default_rng(5)
    records = {name: "".join(rng.choice(list("ACGT"), 2500)) for name in ("chrA", "chrB")}
    motif = MOTIFS[0]  # drives labels 0, 3, 6, ...
    seq = list(records["chrA"])
    for start in (200, 500, 800):
        seq[start:start + len(motif)] = motif if start != 500 else reverse_complement(motif)
    records["chrA"] = "".join(seq)
    path = tmp_path / "genome.fa"
    path.write_text("".join(f">{name}\n{bases}\n" for name, bases in records.items()))
    return str(path), records


def _predict(*args: str) -> list:
    from bigbird_dna.predict import main

    return main(["--no-progress", "--device", "cpu", *args])


def test_predict_writes_919_profiles_of_fasta_windows_to_hdf5(trained, tmp_path):
    _, run_dir = trained
    fasta, _ = _genome(tmp_path)
    [path] = _predict("--model", str(run_dir / "export"), fasta, "--out-prefix", str(tmp_path / "scan"),
                      "--format", "hdf5")
    with h5py.File(path, "r") as f:
        assert f["profiles"].shape == (6, 919)  # windows [0, 1000), [1000, 2000), [1500, 2500) per record
        assert [r.decode() for r in f["record"][:]] == ["chrA"] * 3 + ["chrB"] * 3
        assert f["start"][:].tolist() == [0, 1000, 1500] * 2 and f["end"][:].tolist() == [1000, 2000, 2500] * 2
        assert set(s.decode() for s in f["strand"][:]) == {"."} and len(f["label_names"]) == 919
        profiles = f["profiles"][:]
    motif_labels, other_labels = profiles[:, 0::3], profiles[:, 1::3]
    # The window that holds the planted motif scores its labels above every window without it.
    assert motif_labels[0].mean() > motif_labels[3:].mean(axis=1).max()
    assert motif_labels[0].mean() > other_labels[0].mean()


def test_predict_scores_bed_intervals_on_a_genome_to_tsv(trained, tmp_path):
    _, run_dir = trained
    fasta, _ = _genome(tmp_path)
    bed = tmp_path / "bins.bed"
    bed.write_text("chrA\t400\t600\tbin1\nchrB\t0\t200\tbin2\nchrB\t2300\t2500\tbin3\n")
    [path] = _predict("--model", str(run_dir / "export"), fasta, "--bed", str(bed), "--out-prefix",
                      str(tmp_path / "bins"), "--combine", "per-strand")
    rows = [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("#")]
    assert rows[0][:6] == ["record", "start", "end", "strand", "n_fraction", "label_0"] and len(rows[0]) == 5 + 919
    assert [r[:4] for r in rows[1:]] == [["chrA", "400", "600", "+"], ["chrA", "400", "600", "-"],
                                         ["chrB", "0", "200", "+"], ["chrB", "0", "200", "-"],
                                         ["chrB", "2300", "2500", "+"], ["chrB", "2300", "2500", "-"]]
    assert float(rows[3][4]) == pytest.approx(0.4)  # chrB:0-200 -> window [-400, 600): 400 N of padding


def test_predict_refuses_bed_input_without_exactly_one_genome(trained, tmp_path):
    _, run_dir = trained
    fasta, _ = _genome(tmp_path)
    bed = tmp_path / "bins.bed"
    bed.write_text("chrZ\t0\t200\n")
    with pytest.raises(SystemExit) as stop:
        _predict("--model", str(run_dir / "export"), fasta, fasta, "--bed", str(bed),
                 "--out-prefix", str(tmp_path / "x"))
    assert stop.value.code == 2
    with pytest.raises(SystemExit):
        _predict("--model", str(run_dir / "export"), fasta, "--bed", str(bed), "--out-prefix", str(tmp_path / "x"))
    assert not list(tmp_path.glob("x*")) and not list(tmp_path.glob(".x*"))


def test_intervals_path_trains_on_windows_around_labelled_bins(labelled_genome, tmp_path):
    from bigbird_dna.train import run

    fasta, bins, _ = labelled_genome
    cfg = compose(["task=chromatin", "data=chromatin_intervals", f"data.fasta={fasta}", f"data.intervals={bins}",
                   "data.label_column=4", "data.context_bp=1500", "data.val_records=[chr7]",
                   "data.test_records=[chr8]", "task.num_labels=6", "task.groups=[[DHS,0,2],[TF,2,4],[HM,4,6]]",
                   "data.batch_size=8", "trainer.max_steps=4", "trainer.val_check_interval=4",
                   "tokenizer.sample_bp=50000", "tokenizer.vocab_size=256", *TINY], tmp_path / "run")
    summary = run(cfg)
    assert summary["global_step"] == 4 and 0.0 <= summary["val/auroc_median"] <= 1.0
    rows = (tmp_path / "run" / "chromatin_val_labels.tsv").read_text().splitlines()
    assert rows[1].split("\t")[1:3] == ["feature0", "DHS"]  # names from the header row
    manifest = json.loads((tmp_path / "run" / "split_manifest.json").read_text())
    assert manifest["val"]["records"] == ["chr7"] and manifest["context_bp"] == 1500
    assert load_export(tmp_path / "run" / "export").task_config["predict_window_bp"] == 1500


def test_train_cli_refuses_a_label_count_that_disagrees_with_the_files(planted_bundle, tmp_path):
    result = run_cli("bigbird_dna.train", "task=chromatin", "data=deepsea", f"data.dir={planted_bundle}",
                     "task.num_labels=918", f"hydra.run.dir={tmp_path / 'run'}", *TINY, timeout=300)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "task.num_labels=918: the label count disagrees with the config" in result.stderr
    assert not (tmp_path / "run" / "export").exists()
