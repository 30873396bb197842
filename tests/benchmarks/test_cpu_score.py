"""``benchmarks/cpu_score.py`` runs end to end at a small size and writes its results file."""

import json

from benchmarks.cpu_score import main


def test_scores_every_base_and_writes_the_results(tmp_path):
    path = main(["--length", "40", "--batch-sizes", "8", "--out", str(tmp_path / "cpu_score.json")])
    result = json.loads(path.read_text())
    run = result["runs"]["batch_size=8"]
    assert result["bases"] == 40 and result["tokens_per_row"] == 42
    assert run["finite_bases"] == 40 and run["seconds"] > 0 and run["ms_per_masked_row"] > 0
