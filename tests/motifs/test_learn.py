"""The learn pipeline end to end on oracle attributions: for planted CTCF and FOXA1 sites, TF-MoDISco
then TOMTOM name each planted motif's JASPAR ID as a pattern's best match, and the report folder
shows it; random attributions give no confident match.

TF-MoDISco runs with 2 Leiden runs (instead of 50) to stay fast; on a fresh machine modisco-lite and
memelite first compile their numba kernels (about a minute, cached afterwards)."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from bigbird_dna.motifs.__main__ import main
from bigbird_dna.motifs.attributions import Attributions, read_attributions, write_attributions
from bigbird_dna.motifs.pwm import one_hot
from tests.motifs.conftest import make_task, oracle_attributions, read_rows, read_sites

pytest.importorskip("modiscolite")
pytest.importorskip("memelite")
FAST = ["--jaspar-taxon", "vertebrates", "--leiden-runs", "2"]


@pytest.fixture(scope="module")
def planted(tmp_path_factory, pair):
    """One-hot ``[300, 4, 200]`` positives of a presence task carrying CTCF and FOXA1, their names and
    the ``[start, end)`` of their planted sites."""
    folder = make_task(tmp_path_factory.mktemp("oracle") / "task", pair, rule="presence", num=600,
                       val_fraction=0.0, test_fraction=0.0)
    sites = read_sites(folder)
    positives = [row for row in read_rows(folder) if row["label"] == "1"]
    sequences = np.stack([one_hot(row["sequence"]) for row in positives])
    spans = [[(start, end) for start, end, _, _ in sites[row["name"]]] for row in positives]
    return sequences, [row["name"] for row in positives], spans


def _learn(tmp_path, sequences, attributions, names, capsys):
    source = write_attributions(tmp_path / "attributions.h5", Attributions(
        sequences, attributions, names, method="oracle", target="label", model="planted"))
    main(["learn", str(source), "--out", str(tmp_path / "report"), *FAST])
    print(capsys.readouterr().out)
    return json.loads((tmp_path / "report" / "patterns.json").read_text()), tmp_path / "report"


@pytest.mark.slow
def test_oracle_attributions_recover_each_planted_motif_as_the_best_jaspar_match(tmp_path, planted, pair, capsys):
    sequences, names, spans = planted
    summary, report = _learn(tmp_path, sequences, oracle_attributions(sequences, spans), names, capsys)
    patterns = summary["patterns"]
    best = [(p["name"], p["seqlets"], p["matches"][0]["motif_id"], p["matches"][0]["q_value"]) for p in patterns]
    print("oracle patterns (name, seqlets, best match, q):", best)
    assert {motif_id for _, _, motif_id, _ in best[:2]} == {m.id for m in pair}  # the two largest patterns
    for motif in pair:
        assert any(motif_id == motif.id and q < 0.01 for _, _, motif_id, q in best), motif.id
    assert all(p["metacluster"] == "positive" for p in patterns)
    text = (report / "report.md").read_text()
    for pattern in patterns:
        assert f"| {pattern['name']} (positive) | ![{pattern['name']}]({pattern['logo']}) |" in text
        assert (report / pattern["logo"]).stat().st_size > 1000
        assert (report / pattern["matches"][0]["logo"]).is_file()
        assert np.array(pattern["cwm"]).shape == (len(pattern["ppm"]), 4)
    assert (report / "report.html").read_text().count("<tr>") == len(patterns) + 1
    with h5py.File(report / "modisco.h5") as h5:
        assert len(h5["pos_patterns"]) == len(patterns)
    assert summary["input"] | {"path": None} == {"path": None, "name": "attributions.h5", "method": "oracle",
                                                 "target": "label", "model": "planted", "sequences": 300,
                                                 "length": 200}


@pytest.mark.slow
def test_random_attributions_give_no_confident_match(tmp_path, planted, capsys):
    sequences, names, _ = planted
    noise = np.random.default_rng(1).normal(size=sequences.shape).astype(np.float32)
    summary, report = _learn(tmp_path, sequences, noise, names, capsys)
    best = [(p["name"], p["seqlets"], p["matches"][0]["motif_id"], p["matches"][0]["q_value"])
            for p in summary["patterns"]]
    print("random control patterns:", best or "none")
    assert all(q > 0.05 for *_, q in best)
    assert "TF-MoDISco found no pattern" in (report / "report.md").read_text() or best


def test_an_attribution_file_reads_back_as_written(tmp_path, planted):
    sequences, names, spans = planted
    data = Attributions(sequences[:5], oracle_attributions(sequences[:5], spans[:5]), names[:5], "ism", "1", "m")
    back = read_attributions(write_attributions(tmp_path / "a.h5", data))
    np.testing.assert_array_equal(back.sequences, data.sequences)
    np.testing.assert_array_equal(back.attributions, data.attributions)
    assert (back.names, back.method, back.target, back.model) == (names[:5], "ism", "1", "m")
    assert [p.name for p in tmp_path.iterdir()] == ["a.h5"]  # no temporary file left


def test_fixed_length_byte_strings_read_as_text(tmp_path):
    """h5py gives bytes for fixed-length strings (what numpy ``S`` arrays write): still text here."""
    sequences = np.zeros((2, 4, 30), np.float32)
    sequences[:, 0] = 1
    with h5py.File(tmp_path / "a.h5", "w") as out:
        out["sequences"], out["attributions"], out["names"] = sequences, sequences, np.array([b"x", b"y"])
        out.attrs["method"] = np.bytes_("ism")
    back = read_attributions(tmp_path / "a.h5")
    assert (back.names, back.method, back.target) == (["x", "y"], "ism", "")
