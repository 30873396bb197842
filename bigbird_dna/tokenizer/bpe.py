"""Byte-pair-encoding DNA tokenizer on HF ``tokenizers``: training, encoding, saving.

Design:

- **Alphabet.** The 15 IUPAC nucleotide codes ``ACGTN RYSWKMBDHV`` are in the base vocabulary, so
  every base and ambiguity code round-trips through ``decode``. Anything else becomes ``[UNK]``.
- **Case.** Input is upper-cased before encoding and training: soft-masking is not a token feature,
  and an upper-case-only vocabulary would otherwise turn every soft-masked repeat into ``[UNK]``.
- **Pre-tokenizer.** ``N+|[^N]{1,1024}`` with ``isolated`` behaviour: runs of N become their own
  words, so no token ever mixes N with bases and N is never read as a base; the N-free stretches
  are cut into words of at most :data:`MAX_WORD_BP`. HF BPE slows down on long words: on the
  H. pylori sample, uncut 100 kbp windows encoded 1.7x slower per bp than 1 kbp words, and training
  on uncut 1-10 kbp chunks took 1.6x longer. A cut every 1024 bp costs about 0.4% more tokens.
- **N runs.** Training data rarely holds enough N to learn N tokens, so after training the chain
  ``NN, NNNN, ...`` (powers of two up to ``max_token_length``) is appended to the merges if
  missing: a 10 kbp assembly gap costs ``10000/16`` tokens, not 10000. Tokens made only of N are
  listed in :attr:`DNATokenizer.n_run_ids` (a collator may keep them out of the MLM loss).
- **Special tokens** ``[PAD] [UNK] [CLS] [SEP] [MASK]`` have the fixed ids 0..4. No post-processor:
  ``encode`` adds no special tokens; every task frames its inputs as ``[CLS] tokens [SEP]`` with
  :func:`~bigbird_dna.tokenizer.specials.encode_with_specials`.

Training is deterministic for the same chunks and settings (same ``tokenizer.json`` bytes).
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

from bigbird_dna.errors import InputError
from bigbird_dna.runtime.atomic import write_text_atomic

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
MASK_ID = SPECIAL_TOKENS.index("[MASK]")  # the same id in every bigbird_dna tokenizer
ALPHABET = tuple("ACGTN") + tuple("RYSWKMBDHV")
MAX_WORD_BP = 1024
TOKENIZER_FILE = "tokenizer.json"


def _n_run_chain(max_token_length: int) -> list[tuple[str, str]]:
    """Merges ``N+N, NN+NN, ...`` up to ``max_token_length`` bases."""
    chain, half = [], 1
    while 2 * half <= max_token_length:
        chain.append(("N" * half, "N" * half))
        half *= 2
    return chain


def _with_n_run_merges(tokenizer: Tokenizer, max_token_length: int) -> Tokenizer:
    """Append the missing N-run merges (lowest rank: N tokens never compete with base merges)."""
    model = json.loads(tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    vocab: dict[str, int] = model["vocab"]
    known = set(merges)
    for pair in _n_run_chain(max_token_length):
        if pair not in known:
            merges.append(pair)
            vocab.setdefault(pair[0] + pair[1], len(vocab))
    tokenizer.model = models.BPE(vocab=vocab, merges=merges, unk_token="[UNK]")
    return tokenizer


def _empty_tokenizer() -> Tokenizer:
    tokenizer = Tokenizer(models.BPE(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(f"N+|[^N]{{1,{MAX_WORD_BP}}}"), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return tokenizer


def train_bpe_tokenizer(chunks: Iterable[str], vocab_size: int, max_token_length: int,
                        min_frequency: int = 2) -> "DNATokenizer":
    """Train a BPE tokenizer on DNA chunks (upper-cased first).

    Args:
        chunks: training sequences, e.g. from :func:`~bigbird_dna.genome.sampling.sample_training_chunks`.
        vocab_size: final vocabulary size including the 5 special tokens, the 15-letter alphabet
            and the N-run tokens (it may come out smaller when pairs run out).
        max_token_length: no learned token is longer than this many bases.
        min_frequency: a pair must occur this often to be merged.

    Raises:
        InputError: ``vocab_size`` too small for specials + alphabet + N-run tokens, or
            ``max_token_length < 1``.
    """
    if max_token_length < 1:
        raise InputError(f"max_token_length must be >= 1, got {max_token_length}.")
    n_chain = len(_n_run_chain(max_token_length))
    minimum = len(SPECIAL_TOKENS) + len(ALPHABET) + n_chain
    if vocab_size < minimum:
        raise InputError(f"vocab_size={vocab_size} is too small: {len(SPECIAL_TOKENS)} special tokens, "
                         f"{len(ALPHABET)} letters and {n_chain} N-run tokens need at least {minimum}.")
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - n_chain, min_frequency=min_frequency,
                                  special_tokens=list(SPECIAL_TOKENS), initial_alphabet=list(ALPHABET),
                                  limit_alphabet=len(ALPHABET), max_token_length=max_token_length,
                                  show_progress=False)
    tokenizer = _empty_tokenizer()
    tokenizer.train_from_iterator((chunk.upper() for chunk in chunks), trainer)
    trained = DNATokenizer(_with_n_run_merges(tokenizer, max_token_length))
    if trained.vocab_size < 0.9 * vocab_size:
        warnings.warn(f"BPE trained only {trained.vocab_size} tokens of the {vocab_size} asked for: the training "
                      f"sample has too few pairs occurring >= {min_frequency} times. Give it more sequence "
                      "(tokenizer.sample_bp), ask for fewer tokens, or use tokenizer=char.", stacklevel=2)
    return trained


class DNATokenizer:
    """A trained DNA BPE tokenizer: ids for sequences and back, saving, and a fingerprint.

    ``encode_batch`` runs on ``RAYON_NUM_THREADS`` threads (default: all cores). In DataLoader
    workers set ``TOKENIZERS_PARALLELISM=false`` (or ``RAYON_NUM_THREADS=1``) so that N workers do
    not each start a pool of all cores; ``tokenizers`` itself turns parallelism off, with a warning,
    in a process forked after its parent used it.

    Args:
        tokenizer: a ``tokenizers.Tokenizer`` whose special tokens have the ids of
            :data:`SPECIAL_TOKENS` (0..4).
    """

    def __init__(self, tokenizer: Tokenizer):
        for expected_id, token in enumerate(SPECIAL_TOKENS):
            if tokenizer.token_to_id(token) != expected_id:
                raise InputError(f"not a bigbird_dna tokenizer: {token} should have id {expected_id}, "
                                 f"has {tokenizer.token_to_id(token)}. Retrain it with this package.")
        self._tokenizer = tokenizer
        self._encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        canonical = json.dumps(json.loads(tokenizer.to_str()), sort_keys=True, separators=(",", ":"))
        self._sha256 = hashlib.sha256(canonical.encode()).hexdigest()
        # Tokens made only of N (assembly gaps): a collator may keep them out of the MLM loss.
        self.n_run_ids = frozenset(i for token, i in tokenizer.get_vocab().items() if set(token) == {"N"})

    pad_id = property(lambda self: 0, doc="Id of ``[PAD]`` (always 0).")
    unk_id = property(lambda self: 1, doc="Id of ``[UNK]``.")
    cls_id = property(lambda self: 2, doc="Id of ``[CLS]``.")
    sep_id = property(lambda self: 3, doc="Id of ``[SEP]``.")
    mask_id = property(lambda self: MASK_ID, doc="Id of ``[MASK]``.")

    @property
    def special_ids(self) -> set[int]:
        return set(range(len(SPECIAL_TOKENS)))

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size(with_added_tokens=True)

    @property
    def backend(self) -> Tokenizer:
        """The wrapped ``tokenizers.Tokenizer`` (input there is NOT upper-cased for you)."""
        return self._tokenizer

    @property
    def sha256(self) -> str:
        """SHA-256 of the canonical ``tokenizer.json`` (keys sorted, compact); stable across save/load."""
        return self._sha256

    def token_bases(self) -> list[int]:
        """Bases spelled by each token id ``[vocab_size]``: 0 for special tokens, 1 for [UNK]."""
        lengths = [0] * self.vocab_size
        for token, i in self._tokenizer.get_vocab(with_added_tokens=True).items():
            lengths[i] = 0 if i in self.special_ids else (1 if i == self.unk_id else len(token))
        return lengths

    def encode(self, seq: str) -> list[int]:
        """Token ids of ``seq`` (upper-cased first), without special tokens."""
        # A batch of one skips the char-offset bookkeeping of Tokenizer.encode: 1.5x faster.
        return self._encode_batch([seq.upper()], add_special_tokens=False)[0].ids

    def offsets(self, seqs: Iterable[str]) -> list[list[tuple[int, int]]]:
        """``[start, end)`` of the bases each token spells (0-based, half-open), per sequence: tokens
        in order, no special tokens. A char token covers one base, a k-mer or BPE token several."""
        encodings = self._tokenizer.encode_batch([s.upper() for s in seqs], add_special_tokens=False)
        return [list(e.offsets) for e in encodings]  # encode_batch_fast leaves offsets out

    def encode_batch(self, seqs: list[str]) -> list[list[int]]:
        """Token ids of each sequence, in parallel over ``RAYON_NUM_THREADS`` threads."""
        return [e.ids for e in self._encode_batch([s.upper() for s in seqs], add_special_tokens=False)]

    def decode(self, ids: Iterable[int], skip_special_tokens: bool = True) -> str:
        """The sequence spelled by ``ids``; special tokens are dropped unless asked for."""
        return self._tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def bp_per_token(self, seqs: Iterable[str]) -> float:
        """Mean bases per token over ``seqs`` (total bases / total tokens)."""
        seqs = list(seqs)
        tokens = sum(map(len, self.encode_batch(seqs)))
        return sum(map(len, seqs)) / tokens if tokens else 0.0

    def save(self, path: str | os.PathLike) -> Path:
        """Write ``tokenizer.json`` atomically; ``path`` is the file or an existing directory."""
        path = Path(path)
        if path.is_dir():
            path = path / TOKENIZER_FILE
        return write_text_atomic(path, self._tokenizer.to_str(pretty=True))

    @classmethod
    def load(cls, path: str | os.PathLike) -> "DNATokenizer":
        """Read a tokenizer saved by :meth:`save`: the json file, or a directory holding ``tokenizer.json``."""
        path = Path(path)
        if path.is_dir():
            path = path / TOKENIZER_FILE
        if not path.is_file():
            raise InputError(f"tokenizer not found: {path}. Train one with `python -m bigbird_dna.tokenizer` "
                             "or point tokenizer.path at a tokenizer.json.")
        try:
            tokenizer = Tokenizer.from_file(str(path))
        except Exception as err:  # the Rust side raises plain Exception on bad json
            raise InputError(f"cannot read tokenizer {path}: {err}. The file is corrupt or not a "
                             "tokenizers json; retrain or restore it.") from err
        return cls(tokenizer)

    @classmethod
    def from_str(cls, text: str) -> "DNATokenizer":
        """Rebuild from a json string, e.g. one embedded in a checkpoint."""
        try:
            tokenizer = Tokenizer.from_str(text)
        except Exception as err:  # the Rust side raises plain Exception on bad json
            raise InputError(f"cannot parse the embedded tokenizer json: {err}.") from err
        return cls(tokenizer)

    def to_str(self) -> str:
        """The tokenizer as a json string (what :meth:`save` writes)."""
        return self._tokenizer.to_str(pretty=True)
