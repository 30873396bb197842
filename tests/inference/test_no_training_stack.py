"""Prediction runs without the training stack: in a process where importing Lightning,
torchmetrics, ``bigbird_dna.data``, ``bigbird_dna.tasks`` or ``bigbird_dna.training`` raises, the
promoter, classify and chromatin scans (and the Python API) still work. The exports are the small
legacy fixtures (tests/files/legacy_exports), so nothing is trained here."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

from tests.conftest import REPO

LEGACY = REPO / "tests" / "files" / "legacy_exports"
BLOCKED = ("lightning", "torchmetrics", "bigbird_dna.data", "bigbird_dna.tasks", "bigbird_dna.training")

GUARD = f"""
import sys
from importlib.abc import MetaPathFinder

class Refuse(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {BLOCKED!r}):
            raise ImportError("inference imported " + name)
        return None

sys.meta_path.insert(0, Refuse())
"""


def _run(script: str, tmp_path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", GUARD + textwrap.dedent(script)], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env=None)


def test_the_guard_refuses_the_training_stack(tmp_path):
    """The test can fail: importing training code under the guard raises."""
    result = _run("import bigbird_dna.tasks.promoter\n", tmp_path)
    assert result.returncode != 0 and "inference imported bigbird_dna" in result.stderr


def test_promoter_classify_and_chromatin_scans_run_without_the_training_stack(tmp_path):
    fasta = shutil.copy(LEGACY / "inputs.fa", tmp_path / "inputs.fa")
    out = tmp_path / "out"
    result = _run(f"""
        from bigbird_dna.predict import main
        from bigbird_dna.pretrained import BigBirdDNA
        for task in ("promoter", "classify", "chromatin"):
            written = main(["--model", "{LEGACY}/" + task, "{fasta}", "--out-prefix", "{out}_" + task,
                            "--window", "200", "--device", "cpu", "--no-progress"])
            print(task, [p.name for p in written])
        main(["--model", "{LEGACY}/chromatin", "{fasta}", "--bed", "{LEGACY / 'inputs.bed'}", "--out-prefix",
              "{out}_bed", "--format", "hdf5", "--device", "cpu"])
        print("api", tuple(BigBirdDNA.from_pretrained("{LEGACY}/classify", device="cpu").predict(["ACGT" * 40]).shape))
        print("loaded", sorted(m for m in sys.modules if m.split(".")[0] in ("lightning", "torchmetrics")))
    """, tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "promoter ['out_promoter.tsv', 'out_promoter.bed']" in result.stdout
    assert "classify ['out_classify.tsv']" in result.stdout and "chromatin ['out_chromatin.tsv']" in result.stdout
    assert (tmp_path / "out_bed.h5").is_file() and "api (1, 3)" in result.stdout and "loaded []" in result.stdout
    assert len((tmp_path / "out_promoter.tsv").read_text().splitlines()) > 10
