"""open_genome picks a reader by the file's first bytes, and a new format is one GenomeReader
subclass plus its entry in READERS: callers (here the scan's windows) then read it unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

import bigbird_dna.genome as genome_package
from bigbird_dna.errors import InputError
from bigbird_dna.genome import READERS, open_genome
from bigbird_dna.genome.reader import CHUNK_BP, GenomeReader, RecordChunk
from bigbird_dna.inference.windows import iter_windows


class _Records(dict):
    def close(self) -> None:
        self.clear()


class TableGenome(GenomeReader):
    """A made-up format: a ``#table`` line, then one ``name<TAB>bases`` line per record."""

    description = "a table genome (its first line '#table')"

    @classmethod
    def accepts(cls, path: Path) -> bool:
        return path.read_bytes().startswith(b"#table\n")

    def _records(self) -> dict[str, str]:
        lines = self.path.read_text().splitlines()[1:]
        return dict(line.split("\t") for line in lines)

    @property
    def record_lengths(self) -> dict[str, int]:
        return {name: len(seq) for name, seq in self._records().items()}

    def chunks(self, chunk_bp: int = CHUNK_BP) -> Iterator[RecordChunk]:
        for name, seq in self._records().items():
            starts = range(0, len(seq), chunk_bp)
            for start in starts:
                yield RecordChunk(name, start, seq[start:start + chunk_bp].upper(), start == starts[-1])

    def _open(self) -> _Records:
        return _Records(self._records())

    def _read(self, handle: _Records, record: str, start: int, end: int) -> str:
        return handle[record][start:end].upper()


@pytest.fixture
def table(tmp_path, monkeypatch) -> Path:
    monkeypatch.setattr(genome_package, "READERS", (*READERS, TableGenome))
    path = tmp_path / "g.table"
    path.write_text("#table\nchrA\tACGTacgtNNACGT\nchrB\tGGGCCC\n")
    return path


def test_a_new_format_is_one_reader_in_readers_and_callers_read_it_unchanged(table, tmp_path):
    genome = open_genome(table)
    assert isinstance(genome, TableGenome) and genome.path == table
    assert genome.record_lengths == {"chrA": 14, "chrB": 6}
    assert genome.fetch("chrA", 4, 10) == "ACGTNN"  # 0-based, half-open, upper-case
    with pytest.raises(InputError, match=r"chrB:0-7 runs outside the contig, which is 6 bp long"):
        genome.fetch("chrB", 0, 7)
    windows = [(w.record, w.start, w.seq) for w in iter_windows([table], 8, 8, strands=("+",), chunk_bp=3)]
    assert windows == [("chrA", 0, "ACGTACGT"), ("chrA", 6, "GTNNACGT"), ("chrB", 0, "GGGCCC")]
    fasta = tmp_path / "g.fa"
    fasta.write_text(">chrA\nACGT\n")
    assert type(open_genome(fasta)).__name__ == "FastaGenome"  # FASTA is tried first


def test_a_file_no_reader_accepts_is_refused_naming_every_accepted_format(table, tmp_path):
    other = tmp_path / "g.txt"
    other.write_text("chrA ACGT\n")
    with pytest.raises(InputError) as caught:
        open_genome(other)
    message = str(caught.value)
    assert message.startswith(f"{other} is not a genome file that bigbird_dna reads")
    assert "a FASTA file (plain, gzip or bgzip" in message and "a table genome (its first line '#table')" in message


def test_a_directory_is_refused_before_any_reader_looks_at_it(tmp_path):
    with pytest.raises(InputError, match="is a directory, not a file"):
        open_genome(tmp_path)
