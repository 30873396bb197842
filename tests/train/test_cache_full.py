"""A full cache folder stops ``bigbird_dna.train`` with one ``error:`` line and exit status 2, naming
the folder, the bytes needed and the settings that move the cache."""

from __future__ import annotations

import errno
import gzip
import sys

import pytest

from bigbird_dna import train
from tests.conftest import LAMBDA


def test_no_space_while_decompressing_exits_2_with_the_cache_folder_and_the_fix(tmp_path, monkeypatch, capsys):
    genome = tmp_path / "lambda.fa.gz"
    genome.write_bytes(gzip.compress(LAMBDA.read_bytes()))
    cache = tmp_path / "cache"

    def full(src, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(gzip, "open", full)
    monkeypatch.setattr(train, "_composed", False)
    monkeypatch.setattr(sys, "argv", ["bigbird-dna-train", f"data.fasta={genome}", f"data.cache_dir={cache}",
                                      f"hydra.run.dir={tmp_path / 'run'}", "debug=fast",
                                      "hydra/job_logging=none", "hydra/hydra_logging=none"])
    with pytest.raises(SystemExit) as stopped:
        train.cli()
    assert stopped.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, errors
    assert f"no space left in the cache folder {cache} to decompress {genome}" in errors[0]
    assert f"{len(LAMBDA.read_bytes()):,} bytes" in errors[0]
    assert "BIGBIRD_DNA_CACHE" in errors[0] and "data.cache_dir" in errors[0]
    assert not cache.exists() or not any(cache.iterdir())
