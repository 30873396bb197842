"""``python -m bigbird_dna.predict`` reads its FASTA once and tokenizes each window once, also when a
window could need more tokens than the model has (the check rides on the scan's tokenization)."""

from __future__ import annotations

import builtins
import io
import os
import random
from pathlib import Path

import pytest

from bigbird_dna.predict import main
from bigbird_dna.tokenizer import DNATokenizer
from tests.promoter.conftest import isolated_cache, make_export, tiny_tokenizer, write_fasta  # noqa: F401


class _CountingRaw(io.RawIOBase):
    """A raw file that adds the bytes it reads to ``counter["bytes"]``."""

    def __init__(self, raw, counter: dict):
        self.raw, self.counter = raw, counter

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        n = self.raw.readinto(buffer)
        self.counter["bytes"] += n or 0
        return n

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.raw.seek(offset, whence)

    def tell(self) -> int:
        return self.raw.tell()

    def close(self) -> None:
        self.raw.close()
        super().close()


@pytest.fixture
def fasta_reads(monkeypatch):
    """``watch(path)`` -> a dict whose ``"bytes"`` counts the bytes read from ``path`` by any open
    (builtins.open / io.open, which gzip uses too)."""
    real_open = builtins.open
    counters: dict[Path, dict] = {}

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file).resolve() in counters and "r" in mode:
            raw = _CountingRaw(real_open(file, "rb", buffering=0), counters[Path(file).resolve()])
            stream = io.BufferedReader(raw)
            return stream if "b" in mode else io.TextIOWrapper(stream, encoding=kwargs.get("encoding"))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)

    def watch(path: Path) -> dict:
        return counters.setdefault(Path(path).resolve(), {"bytes": 0})

    return watch


@pytest.fixture
def tokenized(monkeypatch):
    """The number of sequences given to ``DNATokenizer.encode_batch`` (the scan's tokenization)."""
    count = {"seqs": 0}
    real = DNATokenizer.encode_batch

    def counting(self, seqs):
        count["seqs"] += len(seqs)
        return real(self, seqs)

    monkeypatch.setattr(DNATokenizer, "encode_batch", counting)
    return count


@pytest.fixture
def export(tmp_path, tiny_tokenizer):  # noqa: F811
    return make_export(tmp_path / "export", "promoter", tiny_tokenizer, predict_window_bp=100)


def _random_genome(bases: int, seed: int = 0) -> dict[str, str]:
    rng = random.Random(seed)  # random bases: a gzip of them is not much smaller than the text
    return {"chrA": "".join(rng.choices("ACGT", k=bases // 2)), "chrB": "".join(rng.choices("acgtN", k=bases // 2))}


@pytest.mark.parametrize("suffix", [".fa", ".fa.gz"])
def test_the_fasta_is_read_once_and_each_window_tokenized_once(tmp_path, export, fasta_reads, tokenized, suffix):
    fasta = write_fasta(tmp_path / f"g{suffix}", _random_genome(400_000))
    reads = fasta_reads(fasta)
    # window + 2 > the model's 256 tokens: before, a whole extra tokenizing pass checked every window
    main(["--model", str(export), str(fasta), "--out-prefix", str(tmp_path / "out"), "--window", "300",
          "--stride", "20000", "--device", "cpu", "--no-progress"])
    size = fasta.stat().st_size
    assert size <= reads["bytes"] < 1.2 * size, (reads["bytes"], size)  # one pass (plus an 8-KiB gzip probe)
    rows = [line for line in (tmp_path / "out.tsv").read_text().splitlines()[2:]]
    assert len(rows) == 2 * 11  # per record: 0, 20000, ..., 180000 and the end-aligned window
    assert tokenized["seqs"] == 2 * len(rows)  # both strands of each window, once


def test_a_window_too_long_for_the_model_stops_the_one_pass_at_the_first_one(tmp_path, export, fasta_reads,
                                                                            tokenized, capsys):
    genome = _random_genome(40_000)
    iupac = ("RYSWKMBDHV" * 30)[:300]  # no merges: one token per base, 302 with [CLS] and [SEP]
    genome["chrA"] = genome["chrA"][:9000] + iupac + genome["chrA"][9300:]
    genome["chrB"] = iupac + genome["chrB"][300:]
    fasta = write_fasta(tmp_path / "g.fa", genome)
    reads = fasta_reads(fasta)
    with pytest.raises(SystemExit) as stop:
        main(["--model", str(export), str(fasta), "--out-prefix", str(tmp_path / "out"), "--window", "300",
              "--device", "cpu", "--no-progress", "--batch-size", "4"])
    assert stop.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err == ("error: window chrA:9000-9300 (+ strand, 300 bp) needs 302 tokens with [CLS] and [SEP], more "
                   "than the model's 256, which hold about 254 bp of it; use --window 254 or less (no output was "
                   "written).")
    assert reads["bytes"] < 1.2 * fasta.stat().st_size
    assert tokenized["seqs"] <= 2 * 32  # windows 0..9000 (31), in whole batches of 4: none past the first too long
    assert not list(tmp_path.glob("out*")) and not list(tmp_path.glob(".out*"))


def test_tokenizer_worker_processes_write_the_same_files(tmp_path, export):
    fasta = write_fasta(tmp_path / "g.fa", _random_genome(60_000, seed=3))
    outputs = []
    for workers in ("0", "2"):
        prefix = tmp_path / f"out{workers}"
        main(["--model", str(export), str(fasta), "--out-prefix", str(prefix), "--window", "200",
              "--stride", "150", "--device", "cpu", "--no-progress", "--tokenizer-workers", workers])
        outputs.append([(prefix.parent / f"{prefix.name}{ext}").read_text().splitlines()[2:]
                        for ext in (".tsv", ".bed")])
    assert outputs[0] == outputs[1] and len(outputs[0][0]) > 300
