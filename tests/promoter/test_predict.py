"""``python -m bigbird_dna.predict`` on promoter models: window coordinates, strands, outputs, errors
(the driver's tiling and strand rules on their own: ``tests/predict/test_driver.py``)."""

from __future__ import annotations

import gzip
import re

import pytest
import torch

from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.model.export import load_export
from bigbird_dna.model.networks import network_from_export
from bigbird_dna.predict import main
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.conftest import run_cli
from tests.promoter.conftest import lambda_seq, make_export, write_fasta

SEQ = lambda_seq()
RECORDS = {"chrA": SEQ[:250], "chrB": SEQ[1000:1030] + "N" * 30, "chrC": SEQ[2000:2200]}
# Hand-computed 100-bp windows, stride 100: the tail of chrA gets an end-aligned window,
# chrB (60 bp) is one short window.
EXPECTED = [("chrA", 0, 100), ("chrA", 100, 200), ("chrA", 150, 250), ("chrB", 0, 60),
            ("chrC", 0, 100), ("chrC", 100, 200)]


@pytest.fixture
def promoter_export(tmp_path, tiny_tokenizer):
    return make_export(tmp_path / "promoter_export", "promoter", tiny_tokenizer, predict_window_bp=100)


def _rows(path):
    """Header and rows of a predict TSV or BED, without its settings (``#``) or ``track`` line."""
    lines = [line for line in path.read_text().splitlines() if not line.startswith(("#", "track "))]
    return lines[0].split("\t"), [line.split("\t") for line in lines[1:]]


def _bed(path):
    return [line.split("\t") for line in path.read_text().splitlines() if not line.startswith("track ")]


@pytest.mark.parametrize("suffix", [".fa", ".fa.gz"])
def test_predict_on_plain_and_gzip_fasta_writes_hand_computed_windows(tmp_path, promoter_export, suffix):
    fasta = write_fasta(tmp_path / f"genome{suffix}", RECORDS)
    main(["--model", str(promoter_export), str(fasta), "--out-prefix", str(tmp_path / "out"), "--threshold", "0",
          "--batch-size", "4", "--device", "cpu"])
    header, rows = _rows(tmp_path / "out.tsv")
    assert header == ["record", "start", "end", "strand", "score", "n_fraction"]
    assert [(r[0], int(r[1]), int(r[2])) for r in rows] == EXPECTED
    assert {r[3] for r in rows} == {"."}  # both strands, averaged
    assert all(0.0 <= float(r[4]) <= 1.0 for r in rows)
    assert [float(r[5]) for r in rows] == [0, 0, 0, 0.5, 0, 0]
    bed = _bed(tmp_path / "out.bed")
    assert [(b[0], int(b[1]), int(b[2]), b[5]) for b in bed] == [(*e, ".") for e in EXPECTED]
    assert [int(b[4]) for b in bed] == [round(float(r[4]) * 1000) for r in rows]


def test_per_strand_scores_are_the_model_on_the_window_and_its_reverse_complement(tmp_path, promoter_export):
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    main(["--model", str(promoter_export), str(fasta), "--out-prefix", str(tmp_path / "ps"), "--combine",
          "per-strand", "--stride", "40", "--no-progress", "--device", "cpu"])
    main(["--model", str(promoter_export), str(fasta), "--out-prefix", str(tmp_path / "mean"), "--stride", "40",
          "--no-progress", "--device", "cpu"])
    _, per_strand = _rows(tmp_path / "ps.tsv")
    _, mean = _rows(tmp_path / "mean.tsv")
    assert [r[3] for r in per_strand] == ["+", "-"] * len(mean)
    export = load_export(promoter_export)
    model = network_from_export(export)
    record, start, end = per_strand[0][0], int(per_strand[0][1]), int(per_strand[0][2])
    assert (record, start, end) == ("chrA", 0, 100)
    seqs = [RECORDS[record][start:end], reverse_complement(RECORDS[record][start:end])]
    ids, mask, _ = encode_with_specials(export.tokenizer, seqs, 256)
    expected = model.predict_proba(ids, mask)[:, 0]
    assert torch.allclose(torch.tensor([float(per_strand[0][4]), float(per_strand[1][4])]), expected, atol=1e-5)
    for i, row in enumerate(mean):
        both = (float(per_strand[2 * i][4]) + float(per_strand[2 * i + 1][4])) / 2
        assert float(row[4]) == pytest.approx(both, abs=2e-6)


def test_only_windows_at_or_above_the_threshold_reach_the_bed(tmp_path, promoter_export):
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    main(["--model", str(promoter_export), str(fasta), "--out-prefix", str(tmp_path / "t"), "--strands", "+",
          "--no-progress", "--device", "cpu", "--threshold", "0.5"])
    _, rows = _rows(tmp_path / "t.tsv")
    kept = [(r[0], int(r[1]), int(r[2])) for r in rows if float(r[4]) >= 0.5]
    bed = [tuple(b[:3]) for b in _bed(tmp_path / "t.bed")]
    assert [(b[0], int(b[1]), int(b[2])) for b in bed] == kept
    assert {r[3] for r in rows} == {"+"}


def _no_outputs(tmp_path, prefix="out"):
    return not list(tmp_path.glob(f"{prefix}*")) and not list(tmp_path.glob(f".{prefix}*"))


def _fails(capsys, *argv):
    with pytest.raises(SystemExit) as exit_info:
        main([*map(str, argv), "--device", "cpu", "--no-progress"])
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_a_model_of_the_wrong_task_is_refused_and_nothing_is_written(tmp_path, tiny_tokenizer, capsys):
    mlm = make_export(tmp_path / "mlm_export", "mlm", tiny_tokenizer)
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    err = _fails(capsys, "--model", mlm, fasta, "--out-prefix", tmp_path / "out")
    assert "'mlm' model" in err and "promoter" in err
    assert _no_outputs(tmp_path)


@pytest.mark.parametrize("content, needle", [
    (">chrA\nACGTACGT\n>empty\n>chrC\nACGT\n", "record 'empty'.*empty"),
    ("no header here\nACGT\n", "not a FASTA"),
    (b"\x1f\x8b\x08\x00garbage", "cannot read"),
])
def test_bad_fasta_gives_a_clear_error_and_leaves_no_partial_output(tmp_path, promoter_export, capsys, content,
                                                                    needle):
    fasta = tmp_path / "bad.fa"
    fasta.write_bytes(content if isinstance(content, bytes) else content.encode())
    err = _fails(capsys, "--model", promoter_export, fasta, "--out-prefix", tmp_path / "out", "--window", "4")
    assert re.search(needle, err), err
    assert _no_outputs(tmp_path)


def test_a_truncated_gzip_fails_midway_without_partial_output(tmp_path, promoter_export, capsys):
    full = gzip.compress(">chrA\n".encode() + (SEQ[:20000] + "\n").encode())
    fasta = tmp_path / "cut.fa.gz"
    fasta.write_bytes(full[: len(full) // 2])
    err = _fails(capsys, "--model", promoter_export, fasta, "--out-prefix", tmp_path / "out")
    assert "cannot read" in err
    assert _no_outputs(tmp_path)


def test_a_window_longer_than_the_model_context_is_refused(tmp_path, promoter_export, capsys):
    fasta = write_fasta(tmp_path / "genome.fa", {"chrA": SEQ[:5000]})
    err = _fails(capsys, "--model", promoter_export, fasta, "--out-prefix", tmp_path / "out", "--window", "4000")
    assert "which hold about" in err and "bp of it; use --window" in err and err.rstrip().endswith("or less (no "
                                                                                            "output was written).")
    assert _no_outputs(tmp_path)


def test_cli_exit_code_and_one_line_error_for_a_missing_model(tmp_path):
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    result = run_cli("bigbird_dna.predict", "--model", str(tmp_path / "nope"), str(fasta), "--out-prefix",
                     str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "not a bigbird_dna export" in result.stderr
