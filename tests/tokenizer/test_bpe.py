"""DNA BPE tokenizer: special ids, round trips, N handling, training, saving and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer, models

from bigbird_dna.errors import InputError
from bigbird_dna.genome import open_genome
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.tokenizer import (
    ALPHABET,
    SPECIAL_TOKENS,
    DNATokenizer,
    train_bpe_tokenizer,
)

LAMBDA = Path(__file__).resolve().parents[1] / "files" / "lambda_phage.fa"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def chunks() -> list[str]:
    return list(sample_training_chunks(open_genome(LAMBDA), None, total_bp=200_000, seed=0))


@pytest.fixture(scope="module")
def tokenizer(chunks) -> DNATokenizer:
    return train_bpe_tokenizer(chunks, vocab_size=512, max_token_length=16)


def random_dna(rng: np.random.Generator, length: int) -> str:
    """Random bases with a few N runs and single IUPAC ambiguity codes."""
    seq = rng.choice(list("ACGT"), size=length)
    for _ in range(5):
        start = int(rng.integers(0, length - 100))
        seq[start:start + int(rng.integers(1, 100))] = "N"
    seq[rng.integers(0, length, size=20)] = rng.choice(list("RYSWKMBDHV"), size=20)
    return "".join(seq)


def test_special_tokens_have_fixed_ids(tokenizer):
    assert SPECIAL_TOKENS == ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
    assert [tokenizer.backend.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    ids = (tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id)
    assert ids == (0, 1, 2, 3, 4)
    assert tokenizer.special_ids == {0, 1, 2, 3, 4}
    assert tokenizer.vocab_size == 512


def test_encode_adds_no_special_tokens(tokenizer):
    assert not set(tokenizer.encode("ACGTACGTTTGA")) & tokenizer.special_ids


def test_decode_inverts_encode_on_random_dna_with_n_runs_and_iupac(tokenizer):
    rng = np.random.default_rng(1)
    seqs = [random_dna(rng, int(n)) for n in rng.integers(200, 5000, size=10)]
    assert all(tokenizer.decode(tokenizer.encode(s)) == s for s in seqs)
    assert tokenizer.encode_batch(seqs) == [tokenizer.encode(s) for s in seqs]
    assert tokenizer.unk_id not in {i for s in seqs for i in tokenizer.encode(s)}


def test_soft_masked_bases_are_upper_cased_not_unknown(tokenizer):
    assert tokenizer.encode("acgtnnACGT") == tokenizer.encode("ACGTNNACGT")
    assert tokenizer.decode(tokenizer.encode("acgtnn")) == "ACGTNN"


def test_n_stays_n_and_never_shares_a_token_with_bases(chunks):
    gappy = ["".join(c[i:i + 300] + "N" * (i % 7 + 1) for i in range(0, len(c), 300)) for c in chunks]
    tokenizer = train_bpe_tokenizer(gappy, vocab_size=512, max_token_length=16)
    learned = [t for t in tokenizer.backend.get_vocab() if t not in SPECIAL_TOKENS]
    assert all(set(t) == {"N"} or "N" not in t for t in learned)
    run = "ACGT" + "N" * 1000 + "TTGA"
    ids = tokenizer.encode(run)
    n_ids = [i for i in ids if i in tokenizer.n_run_ids]
    assert "".join(tokenizer.backend.id_to_token(i) for i in n_ids) == "N" * 1000
    assert len(n_ids) <= 1000 // 16 + 4  # the N16/N8/N4/NN chain compresses the gap


def test_no_token_is_longer_than_max_token_length(chunks):
    # A 1024-token vocabulary cannot be filled with 4-mers and shorter, so the cap must bite.
    capped = train_bpe_tokenizer(chunks, vocab_size=1024, max_token_length=4)
    lengths = [len(t) for t in capped.backend.get_vocab() if t not in SPECIAL_TOKENS]
    assert max(lengths) == 4


def test_training_is_deterministic(chunks, tokenizer):
    again = train_bpe_tokenizer(chunks, vocab_size=512, max_token_length=16)
    assert again.to_str() == tokenizer.to_str()
    assert again.sha256 == tokenizer.sha256


def test_save_then_load_gives_identical_ids_and_fingerprint(tokenizer, tmp_path):
    seq = random_dna(np.random.default_rng(2), 3000)
    written = tokenizer.save(tmp_path)
    assert written == tmp_path / "tokenizer.json"
    assert sorted(os.listdir(tmp_path)) == ["tokenizer.json"]  # no temp file left behind
    for source in (tmp_path, written):
        loaded = DNATokenizer.load(source)
        assert loaded.encode(seq) == tokenizer.encode(seq)
        assert loaded.sha256 == tokenizer.sha256
    assert DNATokenizer.from_str(written.read_text()).sha256 == tokenizer.sha256


def test_fingerprint_tells_tokenizers_apart(chunks, tokenizer):
    other = train_bpe_tokenizer(chunks, vocab_size=256, max_token_length=16)
    assert len(tokenizer.sha256) == 64 and other.sha256 != tokenizer.sha256


def test_failed_save_leaves_the_old_file_and_no_temp_file(tokenizer, tmp_path, monkeypatch):
    target = tmp_path / "tokenizer.json"
    target.write_text("old")

    def failing_replace(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(OSError):
        tokenizer.save(target)
    assert target.read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["tokenizer.json"]


def test_missing_or_corrupt_or_foreign_tokenizer_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="not found"):
        DNATokenizer.load(tmp_path / "nope.json")
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"model": ')
    with pytest.raises(InputError, match="corrupt"):
        DNATokenizer.load(corrupt)
    foreign = tmp_path / "foreign.json"
    Tokenizer(models.BPE(vocab={"A": 0, "[PAD]": 1}, merges=[])).save(str(foreign))
    with pytest.raises(InputError, match=r"\[PAD\] should have id 0"):
        DNATokenizer.load(foreign)


def test_vocab_smaller_than_specials_and_alphabet_is_an_input_error(chunks):
    with pytest.raises(InputError, match="too small"):
        train_bpe_tokenizer(chunks, vocab_size=len(SPECIAL_TOKENS) + len(ALPHABET), max_token_length=16)


def test_bp_per_token_is_bases_over_tokens(tokenizer, chunks):
    expected = sum(map(len, chunks[:5])) / sum(len(tokenizer.encode(c)) for c in chunks[:5])
    assert tokenizer.bp_per_token(chunks[:5]) == pytest.approx(expected)
    assert expected > 2.0


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bigbird_dna.tokenizer", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)


def test_cli_trains_and_writes_tokenizer_json(tmp_path):
    out = tmp_path / "tokenizer.json"
    done = run_cli("--fasta", str(LAMBDA), "--vocab-size", "256", "--max-token-length", "16",
                   "--sample-bp", "100000", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "held-out bp/token" in done.stdout
    assert DNATokenizer.load(out).vocab_size == 256
    assert json.loads(out.read_text())["model"]["type"] == "BPE"


def test_cli_on_missing_fasta_exits_2_with_one_line(tmp_path):
    done = run_cli("--fasta", str(tmp_path / "missing.fa"), "--out", str(tmp_path / "t.json"))
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: genome FASTA not found")
    assert not (tmp_path / "t.json").exists()
