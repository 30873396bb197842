"""``python -m bigbird_dna.data.annotation``: the task folder end to end, and one-line input errors."""

from __future__ import annotations

import json

import pytest

from bigbird_dna.data.annotation.__main__ import main
from bigbird_dna.data.promoter.files import read_table
from bigbird_dna.genome.bed import read_stranded_bed
from tests.annotation.conftest import gff3_text
from tests.conftest import run_cli

SMALL = ["--min-tss-distance", "600", "--gene-body-tss-distance", "300"]


def test_cli_writes_tsv_bed_and_manifest(annotated, tmp_path):
    out = tmp_path / "task"
    result = run_cli("bigbird_dna.data.annotation", str(annotated["fasta_gz"]), str(annotated["gff3_gz"]),
                     "--task", "promoters", "--out", str(out), "--negatives", "background=1,gene_body=1,shuffled=1",
                     *SMALL, env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")})
    assert result.returncode == 0, result.stderr
    assert "reading annotation" in result.stderr and "train:" in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"]["annotation"]["format"] == "gff3"
    assert manifest["inputs"]["genome"]["name"] == "genome.fa.gz" and manifest["inputs"]["genome"]["bytes"] > 0
    assert manifest["tss"]["after_dedup"] == 11 and manifest["seed"] == 0
    assert manifest["settings"]["negatives"] == {"background": 1.0, "gene_body": 1.0, "shuffled": 1.0}
    for split in ("train", "val", "test"):
        lines = (out / f"{split}.tsv").read_text().splitlines()
        assert lines[0] == "sequence\tlabel\trecord\tstart\tend\tstrand\tkind"
        table = read_table(out / f"{split}.tsv")  # the labelled-promoter reader takes it as it is
        counts = manifest["counts"][split]
        assert len(table) == sum(counts.values()) == manifest["totals"][split]
        assert int(table.labels.sum()) == counts["promoter"] > 0
        regions, strands = read_stranded_bed(out / f"{split}.bed")
        assert len(regions) == len(table)
        rows = [line.split("\t") for line in lines[1:]]
        bed = [line.split("\t") for line in (out / f"{split}.bed").read_text().splitlines()]
        assert [[r[2], r[3], r[4], r[6], r[1], r[5]] for r in rows] == bed
    assert counts["shuffled"] == counts["promoter"]


def test_cli_version_and_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0 and "annotation" in capsys.readouterr().out


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[-1].startswith("error: ")
    return lines[-1]


@pytest.mark.parametrize("old,new,expected", [
    ("chrB\ttest\tgene\t1001", "chrZ\ttest\tgene\t1001", "seqid 'chrZ' is not in the genome FASTA"),
    ("gene\t18501\t19500", "gene\t18501\t20001", "ends past the end of chrA"),
    ("mRNA\t18501\t19500\t.\t+", "mRNA\t18501\t19500\t.\t.", "needs + or -"),
    ("gene\t11001\t12500\t.\t+\t.\t", "gene\t11001\t12500\t.\t+\t", "9 tab-separated columns"),
    ("gene\t11001\t12500", "gene\t11001\tx12500", "must be integers"),
])
def test_bad_annotation_exits_2_with_one_error_line(annotated, tmp_path, capsys, old, new, expected):
    bad = tmp_path / "bad.gff3"
    bad.write_text(gff3_text().replace(old, new, 1))
    line = _error([annotated["fasta"], bad, "--out", tmp_path / "out"], capsys)
    assert expected in line and f"{bad}, line " in line
    assert not (tmp_path / "out").exists()


def test_cli_refuses_a_non_empty_output_folder(annotated, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("x")
    assert "not empty" in _error([annotated["fasta"], annotated["gff3"], "--out", out], capsys)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]


@pytest.mark.parametrize("argv,expected", [
    (["--negatives", "random=1"], "unknown kind"),
    (["--negatives", "background"], "KIND=NUMBER"),
    (["--val-records", "chrQ", "--test-records", "chrB"], "'chrQ'"),
])
def test_bad_settings_exit_2(annotated, tmp_path, capsys, argv, expected):
    assert expected in _error([annotated["fasta"], annotated["gff3"], "--out", tmp_path / "out", *argv], capsys)


def test_missing_files_exit_2(annotated, tmp_path, capsys):
    assert "not found" in _error([annotated["fasta"], tmp_path / "nope.gff3", "--out", tmp_path / "o"], capsys)
    assert "not found" in _error([tmp_path / "nope.fa", annotated["gff3"], "--out", tmp_path / "o"], capsys)
