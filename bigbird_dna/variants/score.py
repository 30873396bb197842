"""Scores of a batch of variant windows: classifier probabilities, embedding distance, MLM llr.

Every score is computed on both strands (the window and its reverse complement) and averaged.

- **Classifier** (``ref_score``, ``alt_score``, ``delta = alt - ref``): :meth:`BigBirdDNA.predict`
  of the ref and alt windows, strands averaged as ``python -m bigbird_dna.predict`` averages them.
- **Embedding distance** (``cos_dist``): ``1 - cos(e_ref, e_alt)`` of the mean-pooled encoder
  states (:meth:`BigBirdDNA.embed`, ``pool="mean"``), per strand, then averaged. 0 = no change.
- **MLM** (``llr``), the masked-marginal log-likelihood ratio of alt over ref. Each window is
  tokenized as in training (``[CLS] tokens [SEP]``); the tokens whose bases overlap the allele's
  bases in that window are all replaced by ``[MASK]`` in one forward pass, and::

      llr = sum_{t in T_alt} log p(x_t | alt window, T_alt masked)
          - sum_{t in T_ref} log p(x_t | ref window, T_ref masked)

  (natural log). With one base per token, ``T_ref`` and ``T_alt`` are exactly the allele's bases
  and this is the per-base masked marginal of the literature. Under BPE the ref and alt windows
  may tokenize differently around the variant, so ``T_ref`` and ``T_alt`` can be different token
  sets (of different size, covering a few different flanking bases): ``llr`` then compares the
  likelihood of the two local spellings, each token set scored jointly-masked. For an indel the
  two sums also cover different numbers of bases, so deletions lean positive and insertions
  negative: compare ``llr`` between variants of one kind. Negative = the model finds ALT less
  likely than REF; ``REF == ALT`` gives exactly 0.
"""

from __future__ import annotations

import torch

from bigbird_dna.genome.sequence import reverse_complement
from bigbird_dna.pretrained import BigBirdDNA
from bigbird_dna.variants.windows import VariantWindows


def _strands(seqs: list[str]) -> list[str]:
    """Each sequence followed by its reverse complement."""
    return [s for seq in seqs for s in (seq, reverse_complement(seq))]


def _strand_spans(seqs: list[str], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The allele spans on :func:`_strands`'s sequences (mirrored on the reverse complement)."""
    return [x for seq, (a, b) in zip(seqs, spans) for x in ((a, b), (len(seq) - b, len(seq) - a))]


def classifier_scores(model: BigBirdDNA, windows: list[VariantWindows],
                      batch_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ref [N, labels], alt [N, labels])`` probabilities, both strands averaged."""
    seqs = [w.ref_seq for w in windows] + [w.alt_seq for w in windows]
    probs = model.predict(seqs, strands="both", batch_size=batch_size, progress=False).reshape(len(seqs), -1)
    return probs[:len(windows)], probs[len(windows):]


def cosine_distance(model: BigBirdDNA, windows: list[VariantWindows], batch_size: int) -> torch.Tensor:
    """``[N]``: ``1 - cosine`` of the ref and alt mean-pooled embeddings, mean of the two strands."""
    ref = model.embed(_strands([w.ref_seq for w in windows]), pool="mean", batch_size=batch_size, progress=False)
    alt = model.embed(_strands([w.alt_seq for w in windows]), pool="mean", batch_size=batch_size, progress=False)
    distance = 1.0 - torch.nn.functional.cosine_similarity(ref, alt, dim=-1)
    return distance.reshape(-1, 2).mean(1)


def masked_log_likelihood(model: BigBirdDNA, seqs: list[str], spans: list[tuple[int, int]],
                          batch_size: int) -> torch.Tensor:
    """``[N]``: sum of ``log p(token)`` over the tokens of each sequence that overlap its span
    ``[a, b)``, all of them masked in one forward pass (see the module docstring)."""
    out = []
    for first in range(0, len(seqs), batch_size):
        batch, batch_spans = seqs[first:first + batch_size], spans[first:first + batch_size]
        ids, mask = model.encode(batch)  # [B, T] with [CLS] at 0
        encodings = model.tokenizer.backend.encode_batch([s.upper() for s in batch], add_special_tokens=False)
        targets = torch.zeros_like(mask)
        for row, (encoding, (a, b)) in enumerate(zip(encodings, batch_spans)):
            for j, (start, end) in enumerate(encoding.offsets):
                targets[row, j + 1] = start < b and end > a
        masked = ids.masked_fill(targets, model.tokenizer.mask_id)
        device = model.device
        with torch.inference_mode(), torch.autocast(device.type, dtype=torch.bfloat16,
                                                    enabled=model.precision == "bf16"):
            hidden = model.module.encoder(masked.to(device), mask.to(device))
            logits = model.module.head(hidden[targets.to(device)]).float()  # [masked tokens, vocab]
        logp = logits.log_softmax(-1).gather(-1, ids[targets].to(device)[:, None])[:, 0].cpu()
        rows = torch.arange(len(batch))[:, None].expand_as(targets)[targets]
        out.append(torch.zeros(len(batch)).index_add_(0, rows, logp))
    return torch.cat(out) if out else torch.empty(0)


def mlm_llr(model: BigBirdDNA, windows: list[VariantWindows], batch_size: int) -> torch.Tensor:
    """``[N]``: the masked-marginal llr of alt over ref (module docstring), mean of the two strands."""
    def side(seqs: list[str], spans: list[tuple[int, int]]) -> torch.Tensor:
        return masked_log_likelihood(model, _strands(seqs), _strand_spans(seqs, spans), batch_size)

    ref = side([w.ref_seq for w in windows], [w.ref_span for w in windows])
    alt = side([w.alt_seq for w in windows], [w.alt_span for w in windows])
    return (alt - ref).reshape(-1, 2).mean(1)
