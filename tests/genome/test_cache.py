"""The gzip cache and the index say what went wrong: a full cache folder, a truncated download, a
stale .fai; and a decompression is announced (where, how large) and reported (bytes, rate)."""

from __future__ import annotations

import contextlib
import errno
import gzip
import logging
import os
from collections import namedtuple

import pytest

from bigbird_dna.errors import InputError
from bigbird_dna.genome import cache as cache_module
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.fasta import prepare_genome
from bigbird_dna.runtime.phases import phase_seconds, reset_phases


@pytest.fixture
def gzipped(write_fasta, toy_records, tmp_path):
    plain = write_fasta("toy.fa", toy_records)
    target = tmp_path / "toy.fa.gz"
    target.write_bytes(gzip.compress(plain.read_bytes()))
    return target, plain.stat().st_size


def _leftovers(cache_dir):
    return sorted(p.name for p in cache_dir.iterdir()) if cache_dir.exists() else []


def test_decompression_is_announced_and_reported_with_bytes_rate_and_phase(gzipped, cache_dir, caplog):
    path, size = gzipped
    reset_phases()
    with caplog.at_level(logging.INFO, logger="bigbird_dna"):
        copy = open_genome(path).indexed_path
    text = caplog.text
    assert f"decompressing {path}" in text and str(copy) in text, text
    assert f"at least {size / 1000:.1f} kB" in text  # the gzip trailer's size, before any byte is written
    assert f"decompress: wrote {size / 1000:.1f} kB to {copy}" in text and "B/s)" in text
    assert list(phase_seconds())[:2] == ["decompress", "index"]


def test_a_full_cache_folder_during_decompression_names_folder_size_and_fix_and_leaves_nothing(
        gzipped, cache_dir, monkeypatch):
    path, size = gzipped
    real_atomic_file = cache_module.atomic_file

    class FillsUp:
        """The real temporary file, which runs out of space after its first 4 kB."""

        def __init__(self, handle):
            self.handle = handle

        def write(self, chunk):
            self.handle.write(chunk[:4096])
            raise OSError(errno.ENOSPC, "No space left on device")

    @contextlib.contextmanager
    def full_disk(target, mode):
        with real_atomic_file(target, mode) as handle:
            assert _leftovers(cache_dir), "the temporary file should exist while it is written"
            yield FillsUp(handle)

    monkeypatch.setattr(cache_module, "atomic_file", full_disk)
    with pytest.raises(InputError) as caught:
        prepare_genome(path)
    message = str(caught.value)
    assert f"no space left in the cache folder {cache_dir}" in message
    assert f"{size:,} bytes" in message
    assert "BIGBIRD_DNA_CACHE" in message and "data.cache_dir" in message
    assert "gzip" not in message.replace(str(path), "")  # not blamed on the download
    assert _leftovers(cache_dir) == []


def test_quota_exceeded_is_a_full_disk_too(gzipped, cache_dir, monkeypatch):
    def over_quota(src, *args, **kwargs):
        raise OSError(errno.EDQUOT, "Disk quota exceeded")

    monkeypatch.setattr(gzip, "open", over_quota)
    with pytest.raises(InputError, match="no space left in the cache folder"):
        prepare_genome(gzipped[0])
    assert _leftovers(cache_dir) == []


def test_too_little_free_space_is_refused_before_writing(gzipped, cache_dir, monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(cache_module.shutil, "disk_usage", lambda folder: usage(10**9, 10**9 - 100, 100))
    with pytest.raises(InputError, match=f"needs at least .* \\({gzipped[1]:,} bytes\\)"):
        prepare_genome(gzipped[0])
    assert _leftovers(cache_dir) == []


def test_a_truncated_gzip_says_download_it_again_not_disk_full(gzipped, tmp_path, cache_dir):
    path, _ = gzipped
    truncated = tmp_path / "cut.fa.gz"
    truncated.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(InputError) as caught:
        prepare_genome(truncated)
    message = str(caught.value)
    assert "ends early: the file is truncated; download it again" in message
    assert "space" not in message
    assert _leftovers(cache_dir) == []


def test_a_fai_from_a_longer_version_of_the_fasta_is_refused_with_the_fix(write_fasta, toy_records):
    fasta = write_fasta("toy.fa", toy_records)
    prepare_genome(fasta)  # indexes the full file
    shrunk = {name: seq[:1000] for name, seq in toy_records.items()}
    write_fasta("toy.fa", shrunk)
    os.utime(f"{fasta}.fai")  # the index looks as new as the file
    with pytest.raises(InputError) as caught:
        prepare_genome(fasta)
    assert f"rm {fasta}.fai" in str(caught.value) and "past the end of the file" in str(caught.value)


def test_a_read_cut_short_by_a_stale_fai_is_an_error_not_a_short_sequence(write_fasta, toy_records):
    fasta = write_fasta("toy.fa", toy_records)
    with open_genome(fasta) as genome:
        assert genome.record_lengths["chrC"] > 5000
        write_fasta("toy.fa", {name: seq[:1000] for name, seq in toy_records.items()})
        with pytest.raises(InputError, match=f"does not match .*rm {fasta}.fai"):
            genome.fetch("chrC", 0, 5000)


def test_a_corrupt_gzip_says_download_it_again(gzipped, tmp_path, cache_dir):
    data = bytearray(gzipped[0].read_bytes())
    data[len(data) // 2: len(data) // 2 + 64] = bytes(64)  # zeroed bytes in the deflate stream
    corrupt = tmp_path / "corrupt.fa.gz"
    corrupt.write_bytes(bytes(data))
    with pytest.raises(InputError, match="is not a valid gzip .*download it again"):
        prepare_genome(corrupt)
    assert _leftovers(cache_dir) == []
