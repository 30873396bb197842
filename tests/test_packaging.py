"""Packaging: one version string on every CLI, help without reST markup, and a core install (no
scipy, matplotlib or submitit) that still trains, embeds and predicts."""

from __future__ import annotations

import subprocess
import sys

import pytest

import bigbird_dna
from bigbird_dna.errors import InputError, require_extra
from tests.conftest import LAMBDA, REPO, run_cli

# Prepended to a subprocess: the optional packages look uninstalled (find_spec and import both fail).
HIDE_EXTRAS = """
import sys
class _NotInstalled:
    names = ("scipy", "matplotlib", "hydra_plugins.hydra_submitit_launcher", "submitit", "pyBigWig")
    def find_spec(self, name, path=None, target=None):
        if name.startswith(self.names):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _NotInstalled())
import importlib.metadata as md
def _hidden(real):
    def lookup(name, *args, **kwargs):
        if name.lower().replace("-", "_").startswith(("scipy", "matplotlib", "hydra_submitit", "submitit", "pybigwig")):
            raise md.PackageNotFoundError(name)
        return real(name, *args, **kwargs)
    return lookup
md.version, md.distribution = _hidden(md.version), _hidden(md.distribution)
"""


@pytest.mark.parametrize("module", ["bigbird_dna.train", "bigbird_dna.predict", "bigbird_dna.embed",
                                    "bigbird_dna.tokenizer"])
def test_every_cli_prints_the_one_version(module):
    result = run_cli(module, "--version")
    assert result.returncode == 0 and result.stdout.split()[-1] == bigbird_dna.__version__, result


def test_predict_help_has_no_rest_markup():
    result = run_cli("bigbird_dna.predict", "--help")
    assert result.returncode == 0 and "--out-prefix" in result.stdout
    assert "``" not in result.stdout and ":func:" not in result.stdout


def test_a_missing_extra_is_a_clear_error():
    with pytest.raises(InputError, match=r"pip install 'bigbird_dna\[tracks\]'"):
        require_extra("no_such_module_here", "tracks", "writing bigWig tracks")


def test_a_core_install_without_extras_trains_embeds_and_predicts(tmp_path):
    script = HIDE_EXTRAS + f"""
from bigbird_dna.train import run
from tests.conftest import compose
run(compose(["debug=fast", "data.fasta={LAMBDA}"], __import__("pathlib").Path({str(tmp_path / "run")!r})))
from bigbird_dna import BigBirdDNA
import bigbird_dna.inference.predictors, bigbird_dna.data.chromatin.deepsea
print(BigBirdDNA.from_pretrained({str(tmp_path / "run" / "export")!r}, device="cpu").embed(["ACGTACGT"]).shape)
from bigbird_dna.data.chromatin.deepsea import _scipy_io
try:
    _scipy_io()
except Exception as err:
    print(err)
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "torch.Size([1, 32])" in result.stdout
    assert "pip install 'bigbird_dna[deepsea]'" in result.stdout


def test_the_plot_cli_without_matplotlib_says_which_extra(tmp_path):
    script = HIDE_EXTRAS + "import runpy\nrunpy.run_module('bigbird_dna.attention.plot', run_name='__main__')\n"
    result = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "pip install 'bigbird_dna[plot]'" in result.stderr, result.stderr
