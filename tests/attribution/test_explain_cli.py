"""``python -m bigbird_dna.explain``: the track is the API's attributions of each window's own bases
(0-based, half-open), the TF-MoDISco file holds the regions as read on their strand, the figures are
written, and bad input is one error line with exit status 2."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from bigbird_dna.explain.__main__ import main
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.bed import Region
from bigbird_dna.genome.regions import tile_region
from bigbird_dna.genome.sequence import reverse_complement
from tests.promoter.conftest import lambda_seq, write_fasta


@pytest.fixture
def genome(tmp_path, monkeypatch):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    seq = lambda_seq()
    fasta = write_fasta(tmp_path / "genome.fa", {"chrB": seq[:400], "chrA": seq[1000:1300]})
    (tmp_path / "peaks.bed").write_text("chrA\t100\t150\tp1\t0\t+\nchrB\t40\t90\tp2\t0\t-\nchrB\t300\t350\tp3\t0\t.\n")
    return fasta


def _bedgraph(path):
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:]]
    return {(r[0], int(r[1])): float(r[3]) for r in rows if int(r[2]) == int(r[1]) + 1}


def test_the_track_holds_each_window_s_own_bases_as_the_api_explains_them(exports, models, genome, tmp_path):
    out = tmp_path / "attr.bedGraph"
    main(["--model", str(exports["labels"]), str(genome), "--region", "chrB:21-260", "--target", "CTCF",
          "--method", "gradient_x_input", "--out", str(out), "--device", "cpu", "--no-progress"])
    track = _bedgraph(out)
    assert sorted(track) == [("chrB", base) for base in range(20, 260)]  # 1-based 21-260 = 0-based [20, 260)
    reader = open_genome(genome)
    tiles = tile_region(Region("chrB", 20, 260), 400, 60)  # the model's window: 60 bp
    assert len(tiles) > 4
    for tile in tiles:
        values = models["labels"].attribute([reader.fetch("chrB", tile.start, tile.end)], method="gradient_x_input",
                                            target="CTCF")[0]
        for base in range(tile.own_start, tile.own_end):
            assert track[("chrB", base)] == pytest.approx(float(values[base - tile.start]), abs=2e-6)


def test_ism_track_and_bigwig(exports, genome, tmp_path):
    pyBigWig = pytest.importorskip("pyBigWig")
    out = tmp_path / "ism.bw"
    main(["--model", str(exports["promoter"]), str(genome), "--region", "chrA:101-130", "--method", "ism",
          "--out", str(out), "--device", "cpu", "--no-progress", "--batch-size", "32"])
    with pyBigWig.open(str(out)) as track:
        values = np.array(track.values("chrA", 100, 130))
        assert track.chroms() == {"chrA": 300, "chrB": 400} and np.isnan(track.values("chrA", 99, 100)[0])
    assert np.isfinite(values).all() and np.abs(values).max() > 0


def test_h5_holds_one_hot_regions_on_their_strand_and_their_hypothetical_contributions(exports, models, genome,
                                                                                    tmp_path):
    from bigbird_dna.motifs.attributions import read_attributions

    out = tmp_path / "peaks.h5"
    main(["--model", str(exports["promoter"]), str(genome), "--bed", str(tmp_path / "peaks.bed"), "--h5", str(out),
          "--method", "gradient_x_input", "--device", "cpu", "--no-progress"])
    data = read_attributions(out)
    assert data.sequences.shape == data.attributions.shape == (3, 4, 50)
    assert data.names == ["chrA:100-150(+)", "chrB:40-90(-)", "chrB:300-350(+)"]
    assert (data.method, data.target) == ("gradient_x_input", "label_0")
    reader = open_genome(genome)
    minus = reverse_complement(reader.fetch("chrB", 40, 90))
    assert "".join("ACGT"[i] for i in data.sequences[1].argmax(0)) == minus
    expected = models["promoter"].attribute([minus], method="gradient_x_input", per_letter=True)[0].numpy()
    np.testing.assert_allclose(data.attributions[1], expected.T, atol=2e-6)


def test_figures_one_png_per_region(exports, genome, tmp_path):
    pytest.importorskip("logomaker")
    folder = tmp_path / "figures"
    main(["--model", str(exports["classes"]), str(genome), "--bed", str(tmp_path / "peaks.bed"), "--target", "promoter",
          "--method", "gradient_x_input", "--png-dir", str(folder), "--device", "cpu", "--no-progress"])
    pngs = sorted(folder.iterdir())
    assert [p.name for p in pngs] == ["0000_chrA_100_150.png", "0001_chrB_40_90.png", "0002_chrB_300_350.png"]
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000 for p in pngs)


def _error(argv, capsys) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


@pytest.mark.parametrize("extra,expected", [
    ([], "nothing to write: give --out"),
    (["--out", "x.wig"], "end the name in .bedGraph"),
    (["--out", "x.bw", "--target", "CTCFL"], "target 'CTCFL' is not an output of this model; it has CTCF, DNase"),
    (["--out", "x.bw"], "this model has 3 outputs; choose a target"),
    (["--out", "x.bw", "--target", "0", "--method", "ism", "--window", "300"],
     "--window of 300 bp is longer than the model reads: at most 254 bp"),
    (["--h5", "x.h5", "--target", "0", "--region", "chrA:1-100"], "region chrA:0-100 (100 bp) is longer than the "
                                                                  "window of 60 bp"),
    (["--h5", "x.h5", "--target", "0", "--region", "chrA:1-50", "--region", "chrA:1-40"], "--h5 needs regions of one "
                                                                                          "length"),
    (["--out", "x.bw", "--target", "0", "--region", "chrC:1-10"], "contig 'chrC' is not in the genome"),
])
def test_bad_input_is_one_error_line(exports, genome, tmp_path, capsys, extra, expected):
    extra = [str(tmp_path / a) if a.startswith("x.") else a for a in extra]
    message = _error(["--model", str(exports["labels"]), str(genome), "--device", "cpu", "--no-progress",
                      "--method", "gradient_x_input", *extra], capsys)
    assert expected in message
    assert not list(tmp_path.glob("x.*"))  # nothing half-written


def test_an_mlm_export_is_sent_to_score(genome, tmp_path, capsys):
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.promoter.conftest import make_export

    mlm = make_export(tmp_path / "mlm", "mlm", char_tokenizer())
    message = _error(["--model", str(mlm), str(genome), "--out", str(tmp_path / "x.bw")], capsys)
    assert "without a classification head" in message and "python -m bigbird_dna.score" in message


@pytest.mark.parametrize("blocked,argv,extra", [("captum", [], "explain"), ("logomaker", ["--png-dir", "figs"],
                                                                             "explain"),
                                                ("pyBigWig", ["--out", "x.bw", "--method", "ism"], "tracks")])
def test_a_missing_extra_is_named(exports, genome, tmp_path, capsys, monkeypatch, blocked, argv, extra):
    for name in (blocked, f"{blocked}.attr"):
        monkeypatch.setitem(sys.modules, name, None)
    argv = [str(tmp_path / a) if a in ("figs", "x.bw") else a for a in argv] or ["--out", str(tmp_path / "x.bg")]
    message = _error(["--model", str(exports["promoter"]), str(genome), *argv], capsys)
    assert f"pip install 'bigbird_dna[{extra}]'" in message
