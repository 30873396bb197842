"""``python -m bigbird_dna.motifs``: plant writes a task folder; bad input (a missing file, an HDF5
of the wrong layout, an existing output folder, an unknown motif ID, a missing optional package)
is one ``error:`` line and exit status 2, with nothing written."""

from __future__ import annotations

import json
import sys

import h5py
import numpy as np
import pytest

from bigbird_dna.motifs.__main__ import main
from tests.conftest import run_cli


def fails(capsys, *argv: str) -> str:
    """The one ``error:`` line that ``main(argv)`` prints as it exits with status 2."""
    with pytest.raises(SystemExit) as exit_:
        main([str(a) for a in argv])
    assert exit_.value.code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def _h5(path, **datasets):
    with h5py.File(path, "w") as out:
        for key, value in datasets.items():
            out.create_dataset(key, data=value)
    return path


def test_plant_writes_a_task_folder_from_the_bundled_genome(tmp_path, capsys):
    pytest.importorskip("pyjaspar")
    main(["plant", "--rule", "spacing", "--num", "40", "--seed", "2", "--out", str(tmp_path / "task")])
    assert "train 32, val 4, test 4 sequences; MA0139" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "task" / "manifest.json").read_text())
    assert manifest["source"]["name"] == "h_pylori_F32.fa" and manifest["seed"] == 2
    assert sorted(p.name for p in (tmp_path / "task").iterdir()) == ["manifest.json", "sites.bed", "test.tsv",
                                                                       "train.tsv", "val.tsv"]


def test_plant_refuses_an_existing_folder_an_unknown_motif_and_bad_ranges(tmp_path, capsys):
    pytest.importorskip("pyjaspar")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert "already exists and is not empty" in fails(capsys, "plant", "--out", tmp_path / "full")
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"
    error = fails(capsys, "plant", "--motif", "MA9999.9", "--out", tmp_path / "new")
    assert "'MA9999.9'" in error and "python -m bigbird_dna.motifs jaspar" in error
    assert "LOW-HIGH" in fails(capsys, "plant", "--spacing", "ten", "--out", tmp_path / "new")
    assert "not found" in fails(capsys, "plant", "--fasta", tmp_path / "missing.fa", "--out", tmp_path / "new")
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("make, expected", [
    (lambda p: p, "attribution file not found"),
    (lambda p: (p.write_text("not hdf5"), p)[1], "cannot read"),
    (lambda p: _h5(p, sequences=np.zeros((2, 4, 50), np.float32)), "no dataset(s) ['attributions']"),
    (lambda p: _h5(p, sequences=np.zeros((2, 50, 4), np.float32), attributions=np.zeros((2, 50, 4), np.float32)),
     "sequences has shape [2, 50, 4]; expected [N, 4, L]"),
    (lambda p: _h5(p, sequences=np.zeros((2, 4, 50), np.float32), attributions=np.zeros((2, 4, 40), np.float32)),
     "must have the same shape [N, 4, L]"),
    (lambda p: _h5(p, sequences=np.full((2, 4, 50), 0.25, np.float32), attributions=np.zeros((2, 4, 50), np.float32)),
     "not one-hot"),
])
def test_learn_refuses_a_missing_or_malformed_attribution_file(tmp_path, capsys, make, expected):
    pytest.importorskip("modiscolite")
    source = make(tmp_path / "attributions.h5")
    assert expected in fails(capsys, "learn", source, "--out", tmp_path / "report")
    assert not (tmp_path / "report").exists()


def test_learn_refuses_an_existing_output_folder_and_bad_settings_before_any_work(tmp_path, capsys):
    pytest.importorskip("modiscolite")
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "old.md").write_text("x")
    assert "already exists" in fails(capsys, "learn", tmp_path / "a.h5", "--out", tmp_path / "report")
    assert "'sliding_window_size': 0" in fails(capsys, "learn", tmp_path / "a.h5", "--out", tmp_path / "new",
                                               "--window", "0")
    assert "--top-matches must be at least 1" in fails(capsys, "learn", tmp_path / "a.h5", "--out",
                                                       tmp_path / "new", "--top-matches", "0")


@pytest.mark.parametrize("module", ["modiscolite", "memelite", "pyjaspar", "logomaker"])
def test_a_missing_optional_package_names_the_extra_to_install(tmp_path, capsys, monkeypatch, module):
    monkeypatch.setitem(sys.modules, module, None)  # import fails as if it were not installed
    error = fails(capsys, "learn", tmp_path / "a.h5", "--out", tmp_path / "report")
    assert f"optional package {module}" in error and "pip install 'bigbird_dna[motifs]'" in error


def test_plant_without_pyjaspar_names_the_extra(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyjaspar", None)
    assert "pip install 'bigbird_dna[motifs]'" in fails(capsys, "plant", "--out", tmp_path / "task")


def test_jaspar_lists_a_taxon_and_refuses_an_unknown_one(capsys):
    pytest.importorskip("pyjaspar")
    main(["jaspar", "--jaspar-taxon", "plants"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 300 and all(line.split("\t")[2] == "plants" for line in lines)
    assert "choose among" in fails(capsys, "jaspar", "--jaspar-taxon", "mammals")


def test_the_module_runs_as_a_command_with_one_error_line(tmp_path):
    result = run_cli("bigbird_dna.motifs", "learn", str(tmp_path / "missing.h5"), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"error: attribution file not found: {tmp_path / 'missing.h5'}. Write one with python -m bigbird_dna.explain."]
    assert run_cli("bigbird_dna.motifs", "--version").stdout.startswith("python -m bigbird_dna.motifs ")
