"""``benchmarks/scan_pipeline.py`` runs the predict pipeline end to end at a small size."""

import json

from benchmarks.scan_pipeline import main


def test_every_window_of_both_strands_comes_back_as_one_row(tmp_path):
    path = main(["--size-mbp", "0.05", "--batch-sizes", "7", "--out", str(tmp_path / "scan.json")])
    run = json.loads(path.read_text())["runs"][0]
    assert run["rows"] == 100 and run["bases"] == 50_000  # 500-bp windows at stride 500, strands combined
    assert run["mbp_per_min"] > 0
