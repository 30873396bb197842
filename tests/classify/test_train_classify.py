"""``python -m bigbird_dna.train task=classify data=classify``: a planted 3-class signal learnt end to
end, the table and Genomic Benchmarks layouts, ``predict`` and ``BigBirdDNA.predict`` on the export,
and bad inputs failing with one ``error:`` line."""

from __future__ import annotations

import json

import pytest
import torch

from bigbird_dna.model.export import load_export
from bigbird_dna.model.networks import network_from_export
from bigbird_dna.model.outputs import SOFTMAX
from tests.classify.conftest import (
    MOTIFS,
    TINY,
    mapping,
    planted,
    write_class_folders,
    write_fasta_per_class,
    write_table,
)
from tests.conftest import compose, run_cli

CLASSES = sorted(MOTIFS)
FEW_STEPS = ["task=classify", "data=classify", *TINY, "data.baselines.enabled=false", "data.batch_size=8",
             "trainer.max_steps=2", "trainer.val_check_interval=2", "trainer.check_val_every_n_epoch=null"]


@pytest.fixture(scope="module")
def learnt(tmp_path_factory):
    """A run on one FASTA per class (100 sequences of 150 bp each) that must learn the motifs."""
    folder = tmp_path_factory.mktemp("learnt")
    files = write_fasta_per_class(folder / "fa", planted(100, seed=0))
    result = run_cli("bigbird_dna.train", "task=classify", "data=classify", f"data.train={mapping(files)}", *TINY,
                     "data.baselines.enabled=false", "data.batch_size=16", "data.val_fraction=0.2", "optim.lr=5e-3",
                     "task.head.pooling=max",  # a motif anywhere in the window
                     "trainer.max_steps=60", "trainer.val_check_interval=60", "trainer.check_val_every_n_epoch=null",
                     f"hydra.run.dir={folder / 'run'}",
                     env={"BIGBIRD_DNA_CACHE": str(folder / "cache")})
    assert result.returncode == 0, result.stderr[-3000:]
    return folder / "run", result


def test_a_planted_three_class_signal_is_learnt_and_exported_with_its_class_names(learnt):
    run_dir, result = learnt
    summary = json.loads((run_dir / "summary.json").read_text())
    print(f"planted-motif validation macro AUROC {summary['val/macro_auroc']:.4f} in {summary['seconds']} s")
    assert summary["task"] == "classify" and summary["global_step"] == 60
    assert summary["val/macro_auroc"] > 0.9, summary
    for name in CLASSES:
        assert summary[f"val/auroc_{name}"] > 0.8, name
    assert 0.0 <= summary["val/accuracy"] <= 1.0 and "val/macro_f1" in summary
    assert "AUROC alpha" in result.stdout and "Sequence classification finished" in result.stdout
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert manifest["class_names"] == CLASSES and manifest["samples"]["val"] == dict.fromkeys(CLASSES, 20)
    export = load_export(run_dir / "export", task="classify")
    assert export.task_config["class_names"] == CLASSES and export.state_dict["head.out.weight"].shape == (3, 32)
    module = network_from_export(export)
    assert export.output.kind is SOFTMAX and module.output == export.output
    assert module.output.names == tuple(CLASSES) and module.head.out.out_features == 3


def test_predict_cli_writes_one_probability_column_per_class_and_the_argmax(learnt, tmp_path):
    from bigbird_dna.predict import main

    run_dir, _ = learnt
    data = planted(4, seed=7)
    fasta = tmp_path / "query.fa"
    fasta.write_text("".join(f">{name}_{i}\n{s}\n" for name, seqs in data.items() for i, s in enumerate(seqs)))
    for strands, prefix in (("both", "out"), ("+", "forward")):  # motifs were planted on the + strand
        written = main(["--model", str(run_dir / "export"), str(fasta), "--out-prefix", str(tmp_path / prefix),
                        "--window", "150", "--strands", strands, "--device", "cpu", "--no-progress"])
        assert written == [tmp_path / f"{prefix}.tsv"]
        lines = written[0].read_text().splitlines()
        assert lines[0].startswith("# bigbird_dna predict ") and "task=classify" in lines[0]
        header, rows = lines[1].split("\t"), [line.split("\t") for line in lines[2:]]
        assert header == ["record", "start", "end", "strand", "n_fraction", *CLASSES, "predicted"]
        assert len(rows) == 12
        assert {(r[1], r[2], r[3]) for r in rows} == {("0", "150", "." if strands == "both" else "+")}
        for row in rows:
            probs = [float(p) for p in row[5:8]]
            assert sum(probs) == pytest.approx(1.0, abs=1e-4) and row[8] == CLASSES[probs.index(max(probs))]
    correct = sum(row[8] == row[0].rsplit("_", 1)[0] for row in rows)
    assert correct >= 10, rows


def test_predict_refuses_flags_of_other_tasks(learnt, tmp_path, capsys):
    from bigbird_dna.predict import main

    run_dir, _ = learnt
    fasta = tmp_path / "q.fa"
    fasta.write_text(">q\n" + planted(1)["beta"][0] + "\n")
    with pytest.raises(SystemExit) as stop:
        main(["--model", str(run_dir / "export"), str(fasta), "--out-prefix", str(tmp_path / "out"),
              "--threshold", "0.5"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stop.value.code == 2 and len(err) == 1 and err[0].startswith("error: --threshold")
    assert "'classify' model" in err[0] and not (tmp_path / "out.tsv").exists()


def test_bigbird_dna_predict_gives_softmax_rows_in_class_name_order(learnt):
    from bigbird_dna import BigBirdDNA

    run_dir, _ = learnt
    model = BigBirdDNA.from_pretrained(run_dir / "export", device="cpu")
    assert model.task == "classify" and model.class_names == CLASSES and model.num_labels == 3
    data = planted(3, seed=11)
    seqs = [s for name in CLASSES for s in data[name]]
    for strands in ("both", "+"):
        probs = model.predict(seqs, strands=strands)
        assert probs.shape == (9, 3) and probs.dtype == torch.float32
        assert torch.allclose(probs.sum(1), torch.ones(9), atol=1e-5)
    assert (probs.argmax(1) == torch.arange(3).repeat_interleave(3)).sum() >= 7


def test_a_table_with_string_labels_and_a_test_split_trains(tmp_path):
    from bigbird_dna.train import run

    train = write_table(tmp_path / "train.tsv", planted(12, seed=2))
    test = write_table(tmp_path / "test.csv", planted(3, seed=3), sep=",")
    summary = run(compose([*FEW_STEPS, f"data.train={train}", f"data.test={test}", "task.class_weights=balanced"],
                          tmp_path / "run"))
    assert summary["global_step"] == 2
    for split in ("val", "test"):
        assert {f"{split}/macro_auroc", f"{split}/accuracy", f"{split}/macro_f1"} <= set(summary)
        assert {f"{split}/auroc_{name}" for name in CLASSES} <= set(summary)
    assert load_export(tmp_path / "run" / "export").task_config["class_counts"] == [11, 11, 11]  # 1 of 12 held out


def test_a_genomic_benchmarks_folder_trains_with_its_test_split(tmp_path):
    from bigbird_dna.train import run

    root = tmp_path / "gb"
    write_class_folders(root / "train", planted(10, seed=4))
    write_class_folders(root / "test", planted(2, seed=5))
    summary = run(compose([*FEW_STEPS, f"data.dir={root}"], tmp_path / "run"))
    assert summary["global_step"] == 2 and "test/macro_auroc" in summary
    manifest = json.loads((tmp_path / "run" / "split_manifest.json").read_text())
    assert manifest["layout"] == "class_folders" and manifest["samples"]["test"] == dict.fromkeys(CLASSES, 2)


@pytest.mark.parametrize("case", ["unknown_val_class", "dir_without_train"])
def test_bad_data_fails_the_cli_with_one_error_line(tmp_path, case):
    data = planted(4, length=40)
    if case == "unknown_val_class":
        files = write_fasta_per_class(tmp_path / "fa", data)
        val = write_table(tmp_path / "val.tsv", {"delta": data["alpha"]})
        overrides = [f"data.train={mapping(files)}", f"data.val={val}"]
        expected = "has class(es) ['delta'] that the training data does not have"
    else:
        overrides = [f"data.dir={tmp_path}"]
        expected = "has no train/ folder"
    result = run_cli("bigbird_dna.train", *FEW_STEPS, *overrides, f"hydra.run.dir={tmp_path / 'run'}",
                     env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert result.returncode == 2 and len(errors) == 1 and expected in errors[0], result.stderr[-2000:]
    assert "Traceback" not in result.stderr and not (tmp_path / "run" / "export").exists()
