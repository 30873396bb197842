"""Exports written before rotary positions existed (no ``position`` key: learned absolute
positions) still load and predict, with the scores of the same weights under ``position=absolute``."""

from __future__ import annotations

import json
import shutil

from bigbird_dna.predict import main
from tests.promoter.conftest import isolated_cache, lambda_seq, make_export, tiny_tokenizer, write_fasta  # noqa: F401


def _scores(tmp_path, export, prefix):
    fasta = write_fasta(tmp_path / "genome.fa", {"lambda": lambda_seq()[:1000]})
    main(["--model", str(export), str(fasta), "--out-prefix", str(tmp_path / prefix), "--device", "cpu",
          "--no-progress", "--threshold", "0"])
    rows = [line.split("\t") for line in (tmp_path / f"{prefix}.tsv").read_text().splitlines()
            if not line.startswith("#")][1:]
    return [(r[0], int(r[1]), int(r[2]), float(r[4])) for r in rows]


def test_an_export_from_before_rope_loads_as_absolute_and_predicts(tmp_path, tiny_tokenizer):
    current = make_export(tmp_path / "absolute", "promoter", tiny_tokenizer, position="absolute")
    old = tmp_path / "old"
    shutil.copytree(current, old)
    config = json.loads((old / "config.json").read_text())
    assert config["model"].pop("position") == "absolute"  # as the pre-RoPE exports were written
    (old / "config.json").write_text(json.dumps(config))

    want, got = _scores(tmp_path, current, "current"), _scores(tmp_path, old, "old")
    assert len(got) >= 10 and got == want
    assert len({score for *_, score in got}) > 1  # real scores, not one constant
