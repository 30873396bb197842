"""Faults injected into ``python -m bigbird_dna.predict``: repeated names and files, a window longer
than the model, flags of another task, signals mid-scan, an unwritable or full output folder. Each
refusal is one ``error:`` line, exit 2, and no output (not even a temporary file)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.predict import main
from tests.conftest import LAMBDA, REPO, run_cli
from tests.promoter.conftest import isolated_cache, lambda_seq, make_export, tiny_tokenizer, write_fasta  # noqa: F401

SEQ = lambda_seq()
GENOME = REPO / "sample_data" / "h_pylori_F32.fa"


@pytest.fixture
def export(tmp_path, tiny_tokenizer):  # noqa: F811
    return make_export(tmp_path / "export", "promoter", tiny_tokenizer, predict_window_bp=100)


def _nothing_written(folder, prefix="out"):
    return not list(folder.glob(f"{prefix}*")) and not list(folder.glob(f".{prefix}*"))


def _refused(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as stop:
        main([*map(str, argv), "--device", "cpu", "--no-progress"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err, err
    return err


def test_a_record_name_twice_in_one_file_or_across_files_is_refused(tmp_path, export, capsys):
    one = write_fasta(tmp_path / "one.fa", {"chrA": SEQ[:300]})
    (tmp_path / "twice.fa").write_text(f">chrA\n{SEQ[:300]}\n>chrA second\n{SEQ[300:600]}\n")
    err = _refused(capsys, "--model", export, tmp_path / "twice.fa", "--out-prefix", tmp_path / "out")
    assert "'chrA' appears twice in" in err and "twice.fa" in err
    other = write_fasta(tmp_path / "other.fa.gz", {"chrB": SEQ[:200], "chrA": SEQ[500:800]})
    err = _refused(capsys, "--model", export, one, other, "--out-prefix", tmp_path / "out")
    assert "'chrA' appears in both" in err and "one.fa" in err and "other.fa.gz" in err
    assert _nothing_written(tmp_path)


def test_the_same_file_twice_is_refused_on_the_command_line(tmp_path, export):
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": SEQ[:300]})
    result = run_cli("bigbird_dna.predict", "--model", str(export), str(fasta), str(tmp_path / "." / "g.fa"),
                     "--out-prefix", str(tmp_path / "out"), "--device", "cpu")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "are the same file" in result.stderr and _nothing_written(tmp_path)


def test_a_window_needing_too_many_tokens_is_named_exactly_before_anything_is_scored(tmp_path, export, capsys):
    # IUPAC codes have no merges: one token per base, so only chrB:300-600 needs more than 256 tokens.
    iupac = ("RYSWKMBDHV" * 30)[:300]
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": SEQ[:900], "chrB": SEQ[:300] + iupac + SEQ[600:900]})
    err = _refused(capsys, "--model", export, fasta, "--out-prefix", tmp_path / "out", "--window", "300")
    assert "window chrB:300-600 (+ strand, 300 bp) needs 302 tokens" in err and "use --window 254 or less" in err
    assert _nothing_written(tmp_path)


@pytest.mark.parametrize("flags, needle", [
    (["--bed", "x.bed"], "--bed (chromatin intervals to score) does not apply to a 'promoter' model"),
    (["--format", "hdf5"], "--format hdf5 does not apply to a promoter model"),
    (["--combine", "max", "--strands", "+"], "--combine max combines the two strands"),
])
def test_flags_that_do_not_apply_are_refused(tmp_path, export, capsys, flags, needle):
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": SEQ[:300]})
    assert needle in _refused(capsys, "--model", export, fasta, "--out-prefix", tmp_path / "out", *flags)
    assert _nothing_written(tmp_path)


def test_threshold_is_refused_for_chromatin_and_stride_with_bed(tmp_path):
    from bigbird_dna.inference.predictors import ProfilePredictor
    from bigbird_dna.inference.request import ScanRequest

    request = ScanRequest(fastas=(tmp_path / "g.fa",), out_prefix=tmp_path / "out", model=tmp_path / "export",
                          threshold=0.9, given=frozenset({"threshold"}))
    with pytest.raises(InputError, match="--threshold .* does not apply to a 'chromatin' model"):
        request.check_options("chromatin", ProfilePredictor.options)
    request = ScanRequest(fastas=(tmp_path / "g.fa",), out_prefix=tmp_path / "out", model=tmp_path / "export",
                          bed=tmp_path / "x.bed", stride=200, given=frozenset({"bed"}))
    with pytest.raises(InputError, match="--stride does not apply with --bed"):
        ProfilePredictor().check(request, "chromatin")


def test_outputs_record_the_settings_and_max_takes_the_larger_strand(tmp_path, export):
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": SEQ[:500]})
    for combine in ("max", "per-strand"):
        main(["--model", str(export), str(fasta), "--out-prefix", str(tmp_path / combine), "--combine", combine,
              "--threshold", "0", "--device", "cpu", "--no-progress"])
    lines = (tmp_path / "max.tsv").read_text().splitlines()
    assert lines[0].startswith("# bigbird_dna predict model=") and "combine=max" in lines[0]
    assert "window_bp=100" in lines[0] and "stride_bp=100" in lines[0] and "threshold=0.0" in lines[0]
    assert lines[1].startswith("record\t")
    track = (tmp_path / "max.bed").read_text().splitlines()[0]
    assert track.startswith('track name="max" description="bigbird_dna predict model=') and "combine=max" in track
    per_strand = [float(line.split("\t")[4]) for line in (tmp_path / "per-strand.tsv").read_text().splitlines()[2:]]
    maxima = [float(line.split("\t")[4]) for line in lines[2:]]
    assert maxima == [max(per_strand[i], per_strand[i + 1]) for i in range(0, len(per_strand), 2)]
    assert {line.split("\t")[3] for line in lines[2:]} == {"."}


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_scan_leaves_no_file_and_no_traceback(tmp_path, export, signum):
    out = tmp_path / "out"
    out.mkdir()
    command = [sys.executable, "-m", "bigbird_dna.predict", "--model", str(export), str(GENOME), "--window", "200",
               "--out-prefix", str(out / "scan"), "--device", "cpu", "--no-progress"]
    scan = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not any(p.stat().st_size > 0 for p in out.glob(".scan.tsv.*.partial")):  # mid-scan: rows written
        assert scan.poll() is None and time.monotonic() < deadline, scan.communicate()
        time.sleep(0.1)
    scan.send_signal(signum)
    _, err = scan.communicate(timeout=60)
    assert scan.returncode == 128 + signum, err
    assert err.strip() == f"error: stopped by {signal.Signals(signum).name}; no output was written (temporary " \
                          "files removed)."
    assert list(out.iterdir()) == []


def test_an_output_folder_that_cannot_exist_gives_one_error(tmp_path, export):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": SEQ[:300]})
    result = run_cli("bigbird_dna.predict", "--model", str(export), str(fasta), "--out-prefix",
                     str(blocker / "sub" / "out"), "--device", "cpu")
    assert result.returncode == 2 and result.stderr.strip().count("\n") == 0, result.stderr
    assert result.stderr.startswith("error: cannot write to the output folder") and "a_file" in result.stderr


def test_a_full_output_disk_gives_one_error_and_no_partial_file(small_tmpfs, export):
    tiny_disk = small_tmpfs("32k")
    earlier = tiny_disk / "earlier.tsv"
    earlier.write_text("kept\n")
    result = run_cli("bigbird_dna.predict", "--model", str(export), str(LAMBDA), "--stride", "5",
                     "--out-prefix", str(tiny_disk / "out"), "--device", "cpu", "--no-progress")
    assert result.returncode == 2, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write") and "No space left" in lines[0], lines
    assert sorted(p.name for p in tiny_disk.iterdir()) == ["earlier.tsv"] and earlier.read_text() == "kept\n"
