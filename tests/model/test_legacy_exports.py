"""Exports written by an older version (tests/files/legacy_exports, see its README) load and give
the numbers that version computed: through ``BigBirdDNA``, ``python -m bigbird_dna.predict`` and the
``transformers`` remote code each export carries."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from bigbird_dna import BigBirdDNA
from tests.conftest import REPO, run_cli

LEGACY = REPO / "tests" / "files" / "legacy_exports"
EXPECTED = json.loads((LEGACY / "expected.json").read_text())
SEQS = EXPECTED["sequences"]
TASKS = ("mlm", "promoter", "classify", "chromatin")
CLASSIFIERS = ("promoter", "classify", "chromatin")


def close(actual, expected, atol: float = 1e-5) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64), atol=atol, rtol=0)


@pytest.mark.parametrize("task", TASKS)
def test_legacy_export_embeds_as_before(task):
    model = BigBirdDNA.from_pretrained(LEGACY / task, device="cpu")
    assert model.task == task
    close(model.embed(SEQS, pool="mean"), EXPECTED[task]["embed_mean"])
    close(model.embed(SEQS, pool="cls"), EXPECTED[task]["embed_cls"])


@pytest.mark.parametrize("task", CLASSIFIERS)
def test_legacy_classifier_predicts_as_before(task):
    model = BigBirdDNA.from_pretrained(LEGACY / task, device="cpu")
    close(model.predict(SEQS), EXPECTED[task]["predict"])
    close(model.predict(SEQS, strands="+"), EXPECTED[task]["predict_plus"])
    assert model.class_names == EXPECTED[task]["class_names"]


def test_legacy_mlm_scores_as_before():
    model = BigBirdDNA.from_pretrained(LEGACY / "mlm", device="cpu")
    for actual, expected in zip(model.score(SEQS[:2]).per_base, EXPECTED["mlm"]["score"]):
        close(actual, expected)


def _rows(path):
    return [line.split("\t") for line in path.read_text().splitlines() if not line.startswith(("#", "track"))]


def _same_rows(actual: list[list[str]], expected: list[str]) -> None:
    """Rows equal field by field; numbers to within one unit of their last printed digit."""
    expected_rows = [line.split("\t") for line in expected]
    assert len(actual) == len(expected_rows)
    for got, want in zip(actual, expected_rows):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            try:
                assert abs(float(a) - float(b)) <= 1.01 * 10 ** -max(len(b.partition(".")[2]), 0), (got, want)
            except ValueError:
                assert a == b, (got, want)


@pytest.mark.parametrize("task", CLASSIFIERS)
def test_legacy_classifier_scans_as_before(task, tmp_path):
    extra = ["--window", "100", "--stride", "50"] if task != "chromatin" else ["--window", "200"]
    fasta = shutil.copy(LEGACY / "inputs.fa", tmp_path / "inputs.fa")  # --bed indexes it: not in the repo
    result = run_cli("bigbird_dna.predict", "--model", str(LEGACY / task), str(fasta),
                     "--out-prefix", str(tmp_path / "out"), "--device", "cpu", *extra)
    assert result.returncode == 0, result.stderr
    _same_rows(_rows(tmp_path / "out.tsv"), EXPECTED[task]["predict_tsv"])
    if task == "promoter":
        _same_rows(_rows(tmp_path / "out.bed"), EXPECTED[task]["predict_bed"])
    if task == "chromatin":
        result = run_cli("bigbird_dna.predict", "--model", str(LEGACY / task), str(fasta),
                         "--bed", str(LEGACY / "inputs.bed"), "--out-prefix", str(tmp_path / "bed"),
                         "--device", "cpu", "--window", "200")
        assert result.returncode == 0, result.stderr
        _same_rows(_rows(tmp_path / "bed.tsv"), EXPECTED[task]["predict_bed_tsv"])


@pytest.mark.parametrize("task", TASKS)
def test_legacy_export_loads_in_transformers_with_its_own_remote_code(task):
    transformers = pytest.importorskip("transformers")
    model = BigBirdDNA.from_pretrained(LEGACY / task, device="cpu")
    hf = transformers.AutoModel.from_pretrained(LEGACY / task, trust_remote_code=True).eval()
    ids, mask = model.encode(SEQS[:1])
    with torch.no_grad():
        hidden = hf(input_ids=ids, attention_mask=mask).last_hidden_state[0, :3]
    close(hidden, EXPECTED[task]["hf_hidden_first_row"])
