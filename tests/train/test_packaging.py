"""``python -m bigbird_dna.train`` finds its configs and the sample genome from a plain (non-editable)
install, run from a directory that is not the source tree."""

from __future__ import annotations

import subprocess
import sys
import zipfile

from tests.conftest import REPO


def test_plain_install_finds_configs_and_sample_genome_from_another_directory(tmp_path):
    wheels = tmp_path / "wheels"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                            "--quiet", "-w", str(wheels), str(REPO)], capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = wheels.glob("bigbird_dna-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "bigbird_dna/conf/train.yaml" in names
    assert "bigbird_dna/conf/model/tiny.yaml" in names
    assert "bigbird_dna/sample_data/h_pylori_F32.fa" in names

    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = subprocess.run([sys.executable, "-m", "bigbird_dna.train", "--cfg", "job", "--resolve"],
                            cwd=elsewhere, env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"fasta: {site}/bigbird_dna/sample_data/h_pylori_F32.fa" in result.stdout
    assert "preset: bigbird_itc" in result.stdout
