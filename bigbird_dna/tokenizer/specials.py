"""Batches of model inputs: ``[CLS] tokens [SEP]``, right-padded, the one way every task tokenizes.

Training (:mod:`bigbird_dna.data.labelled`'s collator), ``predict`` and the
:class:`~bigbird_dna.pretrained.BigBirdDNA` API all call :func:`encode_with_specials`, so training and
inference tokenize exactly the same way. It lives here, beside the tokenizer, so that inference
does not import the training stack.
"""

from __future__ import annotations

from itertools import chain
from typing import Sequence

import numpy as np
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
    # Built in numpy, not row by row: a torch.tensor per row was most of a scan's host time.
    lengths = np.fromiter((min(len(e), body) for e in encoded), dtype=np.int64, count=len(encoded))  # [B]
    width = int(lengths.max()) + 2 if len(encoded) else 2
    ids = np.full((len(encoded), width), tokenizer.pad_id, dtype=np.int64)
    ids[:, 0] = tokenizer.cls_id
    columns = np.arange(width)
    bodies = chain.from_iterable(e if len(e) <= body else e[:body] for e in encoded)
    ids[(columns >= 1) & (columns <= lengths[:, None])] = np.fromiter(bodies, dtype=np.int64, count=int(lengths.sum()))
    ids[np.arange(len(encoded)), lengths + 1] = tokenizer.sep_id
    truncated = [i for i, e in enumerate(encoded) if len(e) > body]
    input_ids = torch.from_numpy(ids)
    return input_ids, input_ids != tokenizer.pad_id, truncated
