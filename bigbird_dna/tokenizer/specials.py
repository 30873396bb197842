"""Batches of model inputs: ``[CLS] tokens [SEP]``, right-padded, the one way every task tokenizes.

Training (:mod:`bigbird_dna.data.labelled`'s collator), ``predict`` and the
:class:`~bigbird_dna.pretrained.BigBirdDNA` API all call :func:`encode_with_specials`, so training and
inference tokenize exactly the same way. It lives here, beside the tokenizer, so that inference
does not import the training stack.

A tokenizer that gives every character its own token (``char``) is applied as a lookup table over
the batch's bytes (:func:`per_character_ids`), the same ids as the ``tokenizers`` call without a
Python object per sequence; any other tokenizer, or a character the table does not hold, goes
through ``tokenizers``.
"""

from __future__ import annotations

import functools
from itertools import chain
from typing import Sequence

import numpy as np
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.bpe import DNATokenizer


@functools.lru_cache(maxsize=8)
def per_character_ids(tokenizer: DNATokenizer) -> np.ndarray | None:
    """``[128]`` int64: the id of each ASCII character, for a tokenizer whose every non-special
    token is one character (so every character is tokenized alone); -1 for a character that does
    not come out as exactly one token. ``None`` for any other tokenizer."""
    special = tokenizer.special_ids
    if any(len(token) != 1 for token, i in tokenizer.backend.get_vocab().items() if i not in special):
        return None
    table = np.full(128, -1, dtype=np.int64)
    for code in range(128):
        ids = tokenizer.encode(chr(code))
        if len(ids) == 1:
            table[code] = ids[0]
    return table


def _table_ids(tokenizer: DNATokenizer, seqs: Sequence[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Every sequence's ids, concatenated ``[sum L_i]``, and the lengths ``[B]``, by table lookup;
    ``None`` where the table does not apply (not a per-character tokenizer, a non-ASCII character,
    or a character without a single token)."""
    table = per_character_ids(tokenizer)
    if table is None or not all(s.isascii() for s in seqs):
        return None
    flat = table[np.frombuffer("".join(seqs).encode("ascii"), dtype=np.uint8)]
    if (flat < 0).any():
        return None
    return flat, np.fromiter(map(len, seqs), dtype=np.int64, count=len(seqs))


def encode_with_specials(tokenizer: DNATokenizer, seqs: Sequence[str],
                         max_tokens: int) -> tuple[torch.Tensor, torch.Tensor, list[int]]:
    """Tokenize sequences as ``[CLS] tokens [SEP]``, right-padded with the pad id (0).

    Args:
        tokenizer: the model's tokenizer.
        seqs: DNA strings (any case, any length, N allowed).
        max_tokens: model context including [CLS] and [SEP]; longer bodies are cut at the end.

    Returns:
        ``(input_ids [B, T] int64, attention_mask [B, T] bool, truncated)``, where ``T`` is the
        longest row of this batch and ``truncated`` lists the indices of the sequences that were cut.
    """
    if max_tokens < 3:
        raise InputError(f"max_tokens={max_tokens} leaves no room for a sequence between [CLS] and [SEP].")
    body = max_tokens - 2
    looked_up = _table_ids(tokenizer, seqs)
    if looked_up is not None:
        flat, full = looked_up
        if (full > body).any():  # keep each row's first `body` ids
            within = np.arange(flat.size) - np.repeat(np.cumsum(full) - full, full)
            flat = flat[within < body]
    else:
        encoded = tokenizer.encode_batch(list(seqs))
        full = np.fromiter(map(len, encoded), dtype=np.int64, count=len(encoded))
        flat = np.fromiter(chain.from_iterable(e if len(e) <= body else e[:body] for e in encoded),
                           dtype=np.int64, count=int(np.minimum(full, body).sum()))
    # Built in numpy, not row by row: a torch.tensor per row was most of a scan's host time.
    lengths = np.minimum(full, body)  # [B]
    width = int(lengths.max()) + 2 if lengths.size else 2
    ids = np.full((lengths.size, width), tokenizer.pad_id, dtype=np.int64)
    ids[:, 0] = tokenizer.cls_id
    columns = np.arange(width)
    ids[(columns >= 1) & (columns <= lengths[:, None])] = flat
    ids[np.arange(lengths.size), lengths + 1] = tokenizer.sep_id
    input_ids = torch.from_numpy(ids)
    return input_ids, input_ids != tokenizer.pad_id, np.flatnonzero(full > body).tolist()


def padding_mask_or_none(attention_mask: torch.Tensor | None) -> torch.Tensor | None:
    """``None`` when ``attention_mask [B, T]`` is a CPU tensor marking every token real, else the mask.

    Call it on a batch still on the CPU (data loaders, predict's batches): the encoder then runs the
    attention kernels without a key-padding mask, which are faster (the masked kernels read the mask
    for every key block) and give the same numbers. A mask already on a GPU is returned as it is:
    deciding would need a device-to-host copy, a sync.
    """
    if attention_mask is not None and attention_mask.device.type == "cpu" and bool(attention_mask.all()):
        return None
    return attention_mask
