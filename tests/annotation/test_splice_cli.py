"""``--task splice_donors|splice_acceptors`` of the CLI and ``data=splice_annotation``: the folder
end to end, one-line input errors, and the DataModule built in-process."""

from __future__ import annotations

import json

import pytest
from hydra.utils import instantiate

from bigbird_dna.data.annotation.__main__ import main
from bigbird_dna.data.annotation.build import build_task_from_files
from bigbird_dna.data.annotation.datamodule import AnnotatedTaskData, settings_from_config
from bigbird_dna.data.promoter.files import read_table
from bigbird_dna.genome import open_genome
from bigbird_dna.tasks.promoter import PromoterTask
from tests.annotation.conftest import gff3_text
from tests.conftest import compose


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: ") and not any(line.startswith("error: ") for line in lines[:-1])
    return lines[-1]


def test_cli_writes_the_splice_acceptor_folder(annotated, tmp_path, capsys):
    out = tmp_path / "acceptors"
    main([str(annotated["fasta_gz"]), str(annotated["gtf_gz"]), "--task", "splice_acceptors", "--out", str(out),
          "--negatives", "decoy=2,background=1", "--upstream", "100", "--downstream", "60", "--seed", "5"])
    assert "positives with AG: 100.00%" in capsys.readouterr().err
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["task"] == "splice_acceptors" and manifest["seed"] == 5
    assert manifest["settings"]["site"] == "acceptor" and manifest["settings"]["upstream_bp"] == 100
    assert manifest["window"] == {"bp": 160, "cut_offset": 100, "dinucleotide_offset": 98}
    assert manifest["sites"]["after_dedup"] == 8 and manifest["dinucleotides"]["canonical_share"] == 1.0
    for split in ("train", "val", "test"):
        table = read_table(out / f"{split}.tsv")  # data=promoter_labelled reads it unchanged
        counts = manifest["counts"][split]
        assert len(table) == manifest["totals"][split] == sum(counts.values())
        assert int(table.labels.sum()) == counts["acceptor"] > 0 and counts["decoy"] == 2 * counts["acceptor"]
        rows = [line.split("\t") for line in (out / f"{split}.tsv").read_text().splitlines()[1:]]
        assert all(r[0][98:100] == "AG" for r in rows if r[6] != "background")  # positives and decoys alike
        bed = [line.split("\t") for line in (out / f"{split}.bed").read_text().splitlines()]
        assert [[r[2], r[3], r[4], r[6], r[1], r[5]] for r in rows] == bed


def test_labelled_promoter_data_trains_on_the_folder(annotated, tmp_path):
    out = tmp_path / "donors"
    main([str(annotated["fasta"]), str(annotated["gff3"]), "--task", "splice_donors", "--out", str(out)])
    cfg = compose(["task=promoter", "data=promoter_labelled", f"data.train={out / 'train.tsv'}",
                   f"data.val={out / 'val.tsv'}", f"data.test={out / 'test.tsv'}"], tmp_path / "run")
    datamodule = instantiate(cfg.data, seed=0, run_dir=str(tmp_path / "run"), is_main_process=True)
    assert isinstance(datamodule, PromoterTask.data_class)
    assert len(datamodule.datasets["train"]) == json.loads((out / "manifest.json").read_text())["totals"]["train"]


def _single_exon_gff(tmp_path):
    path = tmp_path / "single_exon.gff3"
    path.write_text("".join(line + "\n" for line in gff3_text().splitlines()
                            if "\texon\t" not in line or "-e0;" in line))
    return path


@pytest.mark.parametrize("argv,expected", [
    (["--task", "splice"], "unknown task 'splice'; choose among promoters, splice_donors, splice_acceptors"),
    (["--task", "splice_donors", "--min-tss-distance", "600"], "--min-tss-distance do(es) not apply to --task"),
    (["--task", "promoters", "--drop-noncanonical"], "--drop-noncanonical do(es) not apply"),
    (["--task", "splice_donors", "--negatives", "shuffled=1"], "unknown kind(s) ['shuffled']; choose among decoy"),
    (["--task", "splice_acceptors", "--upstream", "1"], "need upstream >= 2"),
])
def test_bad_settings_exit_2_with_one_error_line(annotated, tmp_path, capsys, argv, expected):
    assert expected in _error([annotated["fasta"], annotated["gff3"], "--out", tmp_path / "out", *argv], capsys)
    assert not (tmp_path / "out").exists()


def test_an_annotation_without_introns_exits_2(annotated, tmp_path, capsys):
    single = _single_exon_gff(tmp_path)
    line = _error([annotated["fasta"], single, "--task", "splice_donors", "--out", tmp_path / "out"], capsys)
    assert f"{single} has no intron" in line and "exon" in line
    assert not (tmp_path / "out").exists()


def _overrides(annotated, task="splice_donors"):
    return ["task=promoter", "data=splice_annotation", f"data.task={task}", f"data.fasta={annotated['fasta']}",
            f"data.gff={annotated['gff3_gz']}", "data.negatives.background=1"]


def test_config_builds_the_splice_datamodule_in_process(annotated, tmp_path):
    run_dir = tmp_path / "run"
    cfg = compose(_overrides(annotated, "splice_acceptors"), run_dir)
    datamodule = instantiate(cfg.data, seed=2, run_dir=str(run_dir), is_main_process=True)
    assert isinstance(datamodule, AnnotatedTaskData) and isinstance(datamodule, PromoterTask.data_class)
    manifest = json.loads((run_dir / "split_manifest.json").read_text())
    assert manifest["task"] == "splice_acceptors" and manifest["samples"] == datamodule.counts
    assert set(datamodule.counts["train"]) == {"acceptor", "decoy", "background"}
    task_manifest = json.loads((run_dir / "annotation" / "manifest.json").read_text())
    assert task_manifest["task"] == "splice_acceptors" and task_manifest["counts"] == datamodule.counts
    train = read_table(run_dir / "annotation" / "train.tsv")
    assert train.seqs == datamodule.datasets["train"].seqs
    settings = settings_from_config(dict(cfg.data))  # the CLI's builder gives the same windows
    task, _ = build_task_from_files(open_genome(annotated["fasta"]), annotated["gff3_gz"], "splice_acceptors",
                                    settings, 2)
    assert [s.sequence for s in task.samples["val"]] == datamodule.datasets["val"].seqs
    assert sum(len(s) for s in datamodule.training_text(2000)) == 2000


def test_config_with_an_unknown_task_is_an_input_error(annotated, tmp_path):
    from bigbird_dna.errors import InputError
    from bigbird_dna.training.resolvers import instantiate as instantiate_unwrapped

    cfg = compose(_overrides(annotated, "splice_branchpoints"), tmp_path / "run")
    with pytest.raises(InputError, match="unknown task 'splice_branchpoints'"):
        instantiate_unwrapped(cfg.data, seed=0, run_dir=str(tmp_path / "run"))
