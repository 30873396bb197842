"""Scores of a batch of variant windows: classifier probabilities, embedding distance, MLM llr.

Every score is computed on both strands (the window and its reverse complement) and averaged.

- **Classifier** (``ref_score``, ``alt_score``, ``delta = alt - ref``): :meth:`BigBirdDNA.predict`
  of the ref and alt windows, strands averaged as ``python -m bigbird_dna.predict`` averages them.
- **Embedding distance** (``cos_dist``): ``1 - cos(e_ref, e_alt)`` of the mean-pooled encoder
  states (:meth:`BigBirdDNA.embed`, ``pool="mean"``), per strand, then averaged. 0 = no change.
- **MLM** (``llr``), the masked-marginal log-likelihood ratio of alt over ref, computed by
  :meth:`BigBirdDNA.score` with ``spans`` (:mod:`bigbird_dna.inference.likelihood`). Each window is
  tokenized as in training (``[CLS] tokens [SEP]``); the tokens whose bases overlap the allele's
  bases in that window are all replaced by ``[MASK]`` in one forward pass, and::

      llr = sum_{t in T_alt} log p(x_t | alt window, T_alt masked)
          - sum_{t in T_ref} log p(x_t | ref window, T_ref masked)

  (natural log), each sum the mean of the window's two strands. Tokens holding N or IUPAC codes
  are masked but not counted. With one base per token, ``T_ref`` and ``T_alt`` are exactly the
  allele's bases and, for an SNV, ``llr`` is ``score(alt).per_base[i] - score(ref).per_base[i]``
  at the allele's base ``i`` (``strands="both"``): the per-base masked marginal of the literature.
  Under BPE the ref and alt windows may tokenize differently around the variant, so ``T_ref`` and
  ``T_alt`` can be different token sets (of different size, covering a few different flanking
  bases): ``llr`` then compares the likelihood of the two local spellings, each token set scored
  jointly-masked. For an indel the
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


def mlm_llr(model: BigBirdDNA, windows: list[VariantWindows], batch_size: int) -> torch.Tensor:
    """``[N]``: the masked-marginal llr of alt over ref (module docstring), mean of the two strands:
    the difference of :meth:`BigBirdDNA.score` sums over the allele spans."""
    def side(seqs: list[str], spans: list[tuple[int, int]]) -> torch.Tensor:
        return model.score(seqs, spans=spans, strands="both", batch_size=batch_size, progress=False).sums

    ref = side([w.ref_seq for w in windows], [w.ref_span for w in windows])
    alt = side([w.alt_seq for w in windows], [w.alt_span for w in windows])
    return alt - ref
