"""A FASTA with Windows line endings (CRLF) trains and scans like its LF twin: it is copied once
into the cache with \\n line endings (the streamed reader drops \\r itself)."""

from __future__ import annotations

import gzip

import pytest

from bigbird_dna.genome import open_genome
from tests.conftest import LAMBDA, run_cli


@pytest.mark.parametrize("packed", [False, True])
def test_crlf_fasta_reads_like_its_lf_twin(tmp_path, monkeypatch, packed):
    monkeypatch.setenv("BIGBIRD_DNA_CACHE", str(tmp_path / "cache"))
    text = LAMBDA.read_text()
    crlf = tmp_path / ("crlf.fa.gz" if packed else "crlf.fa")
    data = text.replace("\n", "\r\n").encode()
    written = gzip.compress(data) if packed else data  # once: a gzip header carries the second it was made
    crlf.write_bytes(written)
    with open_genome(LAMBDA) as lf, open_genome(crlf) as windows:
        assert windows.record_lengths == lf.record_lengths
        (record, length), = lf.record_lengths.items()
        assert windows.fetch(record, 1000, 2000) == lf.fetch(record, 1000, 2000)
        assert windows.fetch(record, length - 50, length) == lf.fetch(record, length - 50, length)
        assert [c.seq for c in windows.chunks(10_000)] == [c.seq for c in lf.chunks(10_000)]
    assert crlf.read_bytes() == written  # the user's file is untouched


def test_training_on_a_crlf_fasta_runs(tmp_path):
    crlf = tmp_path / "crlf.fa"
    crlf.write_bytes(LAMBDA.read_text().replace("\n", "\r\n").encode())
    result = run_cli("bigbird_dna.train", "debug=fast", f"data.fasta={crlf}", "trainer.max_steps=2",
                     f"hydra.run.dir={tmp_path / 'run'}", env={"BIGBIRD_DNA_CACHE": str(tmp_path / "cache")},
                     timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "run" / "export" / "model.safetensors").is_file()
