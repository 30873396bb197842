"""Batches of model inputs: ``[CLS] tokens [SEP]``, right-padded, the one way every task tokenizes.

Training (:mod:`bigbird_dna.data.labelled`'s collator), ``predict`` and the
:class:`~bigbird_dna.pretrained.BigBirdDNA` API all call :func:`encode_with_specials`, so training and
inference tokenize exactly the same way. It lives here, beside the tokenizer, so that inference
does not import the training stack.
"""

from __future__ import annotations

from typing import Sequence

import torch

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.bpe import DNATokenizer


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
    encoded = tokenizer.encode_batch(list(seqs))
    rows = [[tokenizer.cls_id, *ids[:body], tokenizer.sep_id] for ids in encoded]
    ids = torch.full((len(rows), max(map(len, rows), default=2)), tokenizer.pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row)
    truncated = [i for i, e in enumerate(encoded) if len(e) > body]
    return ids, ids != tokenizer.pad_id, truncated
