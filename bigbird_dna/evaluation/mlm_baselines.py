"""Context-free and k-mer baselines, scored on exactly the tokens an MLM evaluation scores.

For every evaluation window the collator's fixed masks pick the scored tokens (those whose input
is [MASK]). On those tokens, and on the bases they spell, three predictors are scored:

- ``unigram``: ``p(token)`` from TRAIN token counts (add-one smoothed), in nats/token, the same
  distribution the MLM head starts from;
- ``markov_causal`` / ``markov_bidirectional``: the k-mer models of
  :mod:`bigbird_dna.evaluation.kmer_chains`, fitted on TRAIN, with contexts taken from the window
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

from bigbird_dna.data.mlm.collator import MLMCollator
from bigbird_dna.data.mlm.datamodule import GenomeMLMDataModule
from bigbird_dna.data.mlm.masking import IGNORE_INDEX
from bigbird_dna.evaluation.kmer_chains import KmerModel, encode, select_and_fit
from bigbird_dna.genome.sampling import sample_training_chunks
from bigbird_dna.runtime.phases import human_size, phase


def score_baselines(windows: Iterable[dict[str, Any]], collator, train_token_counts: torch.Tensor,
                    models: dict[str, KmerModel]) -> dict[str, float]:
    """Baseline metrics over the scored tokens of ``windows`` (masked as ``collator`` masks them).

    Args:
        windows: the evaluation windows (``{"seq", "record", "start", ...}``), each masked alone.
        collator: an :class:`~bigbird_dna.data.mlm.collator.MLMCollator` with ``fixed_masks=True``.
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


def train_sequences(data: GenomeMLMDataModule) -> list[str]:
    """The train split's bases for the k-mer chains: all of it, or evenly spread 100 kbp chunks up to
    ``data.baseline_max_bp``."""
    cap = int(data.cfg["baseline_max_bp"])
    regions = data.splits["train"]
    if sum(r.length for r in regions) > cap:
        return list(sample_training_chunks(data.genome, regions, total_bp=cap, min_chunk_bp=100_000,
                                           max_chunk_bp=100_000, seed=data.seed))
    return [data.genome.fetch(record, start, end) for record, start, end in regions]


def chain_metrics(data: GenomeMLMDataModule) -> dict[str, float]:
    """Unigram and k-mer baselines on the val and test tokens the MLM is scored on, for the run's
    summary (after :meth:`~GenomeMLMDataModule.attach_tokenizer`):
    ``{"val/baseline/markov_causal_bits_per_base": ..., "markov_causal_order": ...}``."""
    with phase("baselines") as timing:
        codes = [encode(seq) for seq in train_sequences(data)]
        models, out = {}, {}
        highest = data.cfg["baseline_max_order"]
        for kind, orders in (("causal", range(0, highest + 1)), ("bidirectional", range(0, highest // 2 + 1))):
            models[f"markov_{kind}"], chosen = select_and_fit(codes, kind, orders)
            out[f"markov_{kind}_order"], out[f"markov_{kind}_alpha"] = chosen["order"], chosen["alpha"]
        for split in ("val", "test"):
            collator = MLMCollator(data.tokenizer, data.max_tokens, data.eval_mask_prob, fixed_masks=True,
                                   seed=data.seed)
            scores = score_baselines(data.datasets[split].iter_all(), collator, data.train_token_counts, models)
            out.update({f"{split}/{key}": value for key, value in scores.items()})
        timing.detail = (f"unigram and k-mer chains (causal order {out['markov_causal_order']}, bidirectional "
                         f"order {out['markov_bidirectional_order']}) fitted on "
                         f"{human_size(sum(len(c) for c in codes), 'bp')} of train, scored on val and test")
    return out

