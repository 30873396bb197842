"""predict's genome tracks (bedGraph, bigWig), --merge, gzip TSVs and the BED strand column, on
untrained tiny exports (the scores are arbitrary but deterministic; what is checked is where they go)."""

from __future__ import annotations

import gzip

import pytest
import torch

from bigbird_dna.inference.tracks import TrackBins
from bigbird_dna.inference.windows import ScanWindow
from bigbird_dna.inference.writers import BedHitsWriter, Row
from bigbird_dna.predict import main
from tests.conftest import run_cli
from tests.promoter.conftest import TINY_MODEL, lambda_seq, make_export, tiny_tokenizer, write_fasta  # noqa: F401

SEQ = lambda_seq()
RECORDS = {"chrB": SEQ[:250], "chrA": SEQ[1000:1160]}


@pytest.fixture
def export(tmp_path, tiny_tokenizer):
    return make_export(tmp_path / "export", "promoter", tiny_tokenizer, predict_window_bp=100)


def _scan(tmp_path, export, *extra, prefix="out"):
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    return main(["--model", str(export), str(fasta), "--out-prefix", str(tmp_path / prefix), "--device", "cpu",
                 "--no-progress", "--threshold", "0", *extra])


def _tsv(text):
    rows = [line.split("\t") for line in text.splitlines() if not line.startswith("#")][1:]
    return [(r[0], int(r[1]), int(r[2]), float(r[4])) for r in rows]


def _bedgraph(path):
    return [(r[0], int(r[1]), int(r[2]), float(r[3])) for r in
            (line.split("\t") for line in path.read_text().splitlines() if not line.startswith("track"))]


@pytest.mark.parametrize("stride", [100, 50])
def test_bedgraph_is_sorted_non_overlapping_and_holds_the_tsv_scores(tmp_path, export, stride):
    _scan(tmp_path, export, "--format", "bedgraph", "--stride", str(stride))
    rows, track = _tsv((tmp_path / "out.tsv").read_text()), _bedgraph(tmp_path / "out.bedGraph")
    assert track == sorted(track)
    assert [r[0] for r in track][0] == "chrA"  # sorted by record name, not FASTA order
    # the track is named after the final file, not the temporary one it was written as
    assert (tmp_path / "out.bedGraph").read_text().startswith('track type=bedGraph name="out.bedGraph" ')
    for a, b in zip(track, track[1:]):
        assert a[0] != b[0] or a[2] <= b[1]
    score_of = {(r[0], r[1], r[2]): r[3] for r in rows}
    for record, start, end, score in track:  # every bin lies in a window with that score
        assert any(r == record and s <= start and end <= e and v == score for (r, s, e), v in score_of.items())
    if stride == 100:  # non-overlapping windows: the window itself (chrB's tail clipped to [200, 250))
        assert [t[:3] for t in track if t[0] == "chrB"] == [("chrB", 0, 100), ("chrB", 100, 200), ("chrB", 200, 250)]
    else:  # centred stride-wide bins
        assert [t[:3] for t in track if t[0] == "chrA"] == [("chrA", 25, 75), ("chrA", 75, 125), ("chrA", 125, 135)]


def test_track_bins_of_overlapping_windows_are_centred_and_clipped():
    bins = TrackBins(window=100, stride=40)
    for start in (0, 40, 80, 110):  # the last one is end-aligned at 210
        bins.add("r", start, start + 100, start / 1000)
    assert [row[1:3] for row in bins.rows()] == [(30, 70), (70, 110), (110, 150), (150, 180)]
    assert bins.sizes == {"r": 210}


def test_bigwig_is_written_and_reads_back(tmp_path, export):
    pyBigWig = pytest.importorskip("pyBigWig")
    _scan(tmp_path, export, "--format", "bigwig")
    track = pyBigWig.open(str(tmp_path / "out.bw"))
    try:
        assert track.chroms() == {"chrA": 160, "chrB": 250}
        rows = _tsv((tmp_path / "out.tsv").read_text())
        for record, start, end, score in rows:  # a window's last base is in its own bin (stride = window)
            assert track.intervals(record, end - 1, end)[0][2] == pytest.approx(score, abs=1e-6)
    finally:
        track.close()


def test_bigwig_without_pybigwig_is_one_clear_error_and_no_output(tmp_path, export):
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    hide = tmp_path / "hide"
    hide.mkdir()
    (hide / "sitecustomize.py").write_text("import sys\nsys.modules['pyBigWig'] = None\n")
    result = run_cli("bigbird_dna.predict", "--model", str(export), str(fasta), "--out-prefix", str(tmp_path / "o"),
                     "--format", "bigwig", "--device", "cpu", env={"PYTHONPATH": f"{hide}"})
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pip install 'bigbird_dna[tracks]'" in errors[0]
    assert not list(tmp_path.glob("o*")) and not list(tmp_path.glob(".o*"))


def test_merge_joins_overlapping_or_touching_windows_with_the_max_score(tmp_path):
    window = ScanWindow("r", 0, 100, "+", "A" * 100, 0.0)  # not read by the BED writer
    with BedHitsWriter(tmp_path / "hits.bed", threshold=0.5, merge=True, name="promoter", track_line="") as bed:
        for record, start, end, strand, score in [
                ("r", 0, 100, "+", 0.6), ("r", 50, 150, "+", 0.9), ("r", 150, 250, "+", 0.7),
                ("r", 300, 400, "+", 0.8), ("r", 350, 450, "-", 0.55), ("s", 0, 100, "-", 0.95),
                ("s", 500, 600, "-", 0.4)]:  # below the threshold: not written
            bed.add(Row(record, start, end, strand, 0.0, torch.tensor([score]), window))
    assert (tmp_path / "hits.bed").read_text().splitlines() == [
        "r\t0\t250\tpromoter\t900\t+", "r\t300\t450\tpromoter\t800\t.", "s\t0\t100\tpromoter\t950\t-"]


def test_merge_on_a_scan_covers_the_same_windows(tmp_path, export):
    _scan(tmp_path, export, "--merge", "--stride", "50")
    bed = [line.split("\t") for line in (tmp_path / "out.bed").read_text().splitlines()[1:]]
    assert [(b[0], b[1], b[2]) for b in bed] == [("chrB", "0", "250"), ("chrA", "0", "160")]  # threshold 0
    rows = _tsv((tmp_path / "out.tsv").read_text())
    assert int(bed[0][4]) == round(max(r[3] for r in rows if r[0] == "chrB") * 1000)


@pytest.mark.parametrize("how", ["flag", "suffix"])
def test_gzip_tsv_equals_the_plain_one(tmp_path, export, how):
    _scan(tmp_path, export, prefix="plain")
    if how == "flag":
        _scan(tmp_path, export, "--gzip", prefix="packed")
    else:
        _scan(tmp_path, export, prefix="packed.tsv.gz")
    assert not (tmp_path / "packed.tsv").exists()
    packed = gzip.decompress((tmp_path / "packed.tsv.gz").read_bytes()).decode()
    plain = (tmp_path / "plain.tsv").read_text()
    strip = lambda text: [line for line in text.splitlines() if not line.startswith("#")]  # noqa: E731
    assert strip(packed) == strip(plain)


def _chromatin_export(tmp_path, tiny_tokenizer):
    import torch

    from bigbird_dna.model.export import write_export
    from bigbird_dna.tasks.chromatin import ChromatinTask

    torch.manual_seed(0)
    module = ChromatinTask({**TINY_MODEL, "vocab_size": tiny_tokenizer.vocab_size, "pad_id": 0}, {}, num_labels=3,
                           pos_weight=None, head={"dropout": 0.0}, tokenizer_sha256=tiny_tokenizer.sha256)
    module.eval()
    ids = torch.randint(5, tiny_tokenizer.vocab_size, (1, 200))
    module(ids, torch.ones_like(ids, dtype=torch.bool))
    export = write_export(tmp_path / "chrom", "chromatin", module.state_dict(), module.config.to_dict(),
                          tiny_tokenizer, task_config={"name": "chromatin", "head": {"dropout": 0.0},
                                                       "predict_window_bp": 100})
    return export


def test_chromatin_track_of_one_label_holds_its_tsv_column(tmp_path, tiny_tokenizer):
    export = _chromatin_export(tmp_path, tiny_tokenizer)
    fasta = write_fasta(tmp_path / "genome.fa", RECORDS)
    common = ["--model", str(export), str(fasta), "--device", "cpu", "--no-progress", "--stride", "50"]
    main([*common, "--out-prefix", str(tmp_path / "c"), "--format", "bedgraph", "--label", "label_1"])
    main([*common, "--out-prefix", str(tmp_path / "i"), "--format", "bedgraph", "--label", "1"])
    assert _bedgraph(tmp_path / "c.bedGraph") == _bedgraph(tmp_path / "i.bedGraph")
    rows = [line.split("\t") for line in (tmp_path / "c.tsv").read_text().splitlines()[2:]]
    score_of = {(r[0], int(r[1]), int(r[2])): float(r[6]) for r in rows}  # label_1's column
    for record, start, end, score in _bedgraph(tmp_path / "c.bedGraph"):
        assert any(r == record and s <= start and end <= e and v == score for (r, s, e), v in score_of.items())
    with pytest.raises(SystemExit):
        main([*common, "--out-prefix", str(tmp_path / "x"), "--format", "bedgraph"])  # no --label
    assert not list(tmp_path.glob("x*"))


def test_bed_strand_column_scores_only_that_strand(tmp_path, tiny_tokenizer):
    export = _chromatin_export(tmp_path, tiny_tokenizer)
    fasta = write_fasta(tmp_path / "genome.fa", {"chr1": SEQ[:1000]})
    bed = tmp_path / "in.bed"
    bed.write_text("chr1\t100\t200\ta\t0\t+\nchr1\t300\t400\tb\t0\t-\nchr1\t500\t600\tc\t0\t.\nchr1\t700\t800\n")
    common = ["--model", str(export), str(fasta), "--bed", str(bed), "--device", "cpu", "--no-progress"]
    main([*common, "--out-prefix", str(tmp_path / "s")])
    main([*common, "--out-prefix", str(tmp_path / "p"), "--combine", "per-strand"])
    rows = [line.split("\t") for line in (tmp_path / "s.tsv").read_text().splitlines()[2:]]
    per_strand = {(r[1], r[3]): r[5:] for r in
                  (line.split("\t") for line in (tmp_path / "p.tsv").read_text().splitlines()[2:])}
    assert [(r[1], r[3]) for r in rows] == [("100", "+"), ("300", "-"), ("500", "."), ("700", ".")]
    assert rows[0][5:] == per_strand[("100", "+")] and rows[1][5:] == per_strand[("300", "-")]
    assert ("100", "-") not in per_strand and ("300", "+") not in per_strand
