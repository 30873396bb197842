"""Tokenizers that need no training: one token per base (``char``) and non-overlapping k-mers (``kmer``).

Both are ordinary HF ``tokenizers`` objects wrapped in :class:`~bigbird_dna.tokenizer.bpe.DNATokenizer`,
with the same special ids (``[PAD] [UNK] [CLS] [SEP] [MASK]`` = 0..4) and the 15 IUPAC letters
``ACGTN RYSWKMBDHV`` as tokens of their own, so they save as one ``tokenizer.json`` like BPE.

- ``char``: one token per base (HyenaDNA, Caduceus). Nucleotide resolution; N and every IUPAC code
  is its own token. The [MASK] of a char model hides exactly one base.
- ``kmer``: non-overlapping ``k``-mers of A/C/G/T read left to right (Nucleotide Transformer); N,
  IUPAC codes and the ``< k`` bases before them or at a sequence end fall back to single letters.
"""

from __future__ import annotations

import itertools

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.bpe import ALPHABET, SPECIAL_TOKENS, DNATokenizer


def _vocab(extra: list[str]) -> dict[str, int]:
    tokens = [*SPECIAL_TOKENS, *ALPHABET, *extra]
    return {token: i for i, token in enumerate(tokens)}


def char_tokenizer() -> DNATokenizer:
    """One token per base: 5 special tokens + 15 letters = 20 ids."""
    tokenizer = Tokenizer(models.WordLevel(vocab=_vocab([]), unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return DNATokenizer(tokenizer)


def kmer_tokenizer(k: int) -> DNATokenizer:
    """Non-overlapping ``k``-mers of ACGT (``4**k`` ids) plus single letters; ``1 <= k <= 8``."""
    if not 1 <= k <= 8:
        raise InputError(f"tokenizer.k={k}: choose a k-mer length from 1 to 8 (4**k tokens).")
    kmers = ["".join(p) for p in itertools.product("ACGT", repeat=k)] if k > 1 else []
    tokenizer = Tokenizer(models.WordLevel(vocab=_vocab(kmers), unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(f"[ACGT]{{{k}}}|."), behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    return DNATokenizer(tokenizer)


def tokenizer_from_config(cfg: dict, training_chunks) -> DNATokenizer:
    """The tokenizer a ``tokenizer`` config group asks for (``kind``: bpe, char or kmer).

    ``training_chunks`` is called (no arguments) only for BPE and must return the sequences to
    train on, already limited to ``cfg["sample_bp"]``.
    """
    from bigbird_dna.tokenizer.bpe import train_bpe_tokenizer

    kind = cfg.get("kind", "bpe")
    if kind == "char":
        return char_tokenizer()
    if kind == "kmer":
        return kmer_tokenizer(int(cfg["k"]))
    if kind != "bpe":
        raise InputError(f"tokenizer.kind={kind!r}: choose tokenizer=bpe, char or kmer.")
    return train_bpe_tokenizer(training_chunks(), vocab_size=cfg["vocab_size"],
                               max_token_length=cfg["max_token_length"])
