"""Context-free and k-mer baselines, scored on exactly the tokens an MLM evaluation scores.

For every evaluation window the collator's fixed masks pick the scored tokens (those whose input
is [MASK]). On those tokens, and on the bases they spell, three predictors are scored:

- ``unigram``: ``p(token)`` from TRAIN token counts (add-one smoothed), in nats/token, the same
  distribution the MLM head starts from;
- ``markov_causal`` / ``markov_bidirectional``: the k-mer models of
  :mod:`bigbird_dna.data.markov_baseline`, fitted on TRAIN, with contexts taken from the window
  itself (what the MLM sees), scored per base.

Every baseline is reported as ``bits_per_base`` (total bits / scored bases) and as ``loss``
(nats per scored token, the MLM's own unit; for the k-mer models that is the sum of the token's
per-base costs). Keys: ``baseline/<name>_bits_per_base``, ``baseline/<name>_loss``.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np
import torch

from bigbird_dna.data.markov_baseline import KmerModel, encode
from bigbird_dna.data.masking import IGNORE_INDEX


def score_baselines(windows: Iterable[dict[str, Any]], collator, train_token_counts: torch.Tensor,
                    models: dict[str, KmerModel]) -> dict[str, float]:
    """Baseline metrics over the scored tokens of ``windows`` (masked as ``collator`` masks them).

    Args:
        windows: the evaluation windows (``{"seq", "record", "start", ...}``), each masked alone.
        collator: an :class:`~bigbird_dna.data.mlm.MLMCollator` with ``fixed_masks=True``.
        train_token_counts: ``[vocab]`` token counts of the train split.
        models: k-mer models by name, e.g. ``{"markov_causal": ..., "markov_bidirectional": ...}``.
    """
    counts = train_token_counts.double() + 1.0
    log_prior = (counts / counts.sum()).log()  # [vocab], nats
    bases_of = np.asarray(collator.tokenizer.token_bases(), dtype=np.int64)
    mask_id = collator.tokenizer.mask_id
    totals = {"tokens": 0.0, "bases": 0.0, "unigram": 0.0, **{name: 0.0 for name in models}}
    for item in windows:
        (row,) = collator.tokenize([item["seq"]])
        inputs, labels = collator.mask_row(row, item)
        scored = ((labels != IGNORE_INDEX) & (inputs == mask_id)).numpy()
        if not scored.any():
            continue
        ids = np.asarray(row)
        starts = np.concatenate([[0], np.cumsum(bases_of[ids])])[:-1]  # base offset of each row position
        lengths = bases_of[ids]
        totals["tokens"] += float(scored.sum())
        totals["bases"] += float(lengths[scored].sum())
        totals["unigram"] += float(-log_prior[torch.from_numpy(ids[scored])].sum())
        codes = encode(item["seq"].upper())
        for name, model in models.items():
            cumulative = np.concatenate([[0.0], np.cumsum(model.bits(codes))])
            ends = np.minimum(starts + lengths, len(codes))
            totals[name] += float((cumulative[ends[scored]] - cumulative[starts[scored]]).sum()) * math.log(2)
    tokens, bases = max(totals["tokens"], 1.0), max(totals["bases"], 1.0)
    out = {"baseline/scored_tokens": totals["tokens"], "baseline/scored_bases": totals["bases"]}
    for name in ("unigram", *models):
        out[f"baseline/{name}_loss"] = totals[name] / tokens
        out[f"baseline/{name}_bits_per_base"] = totals[name] / math.log(2) / bases
    return out
