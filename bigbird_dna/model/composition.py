"""The classifier head's composition path: a sequence's k-mer frequencies, read by one linear layer.

A wide-and-deep head: the pooled encoder states (the deep part) and, beside them, the frequencies
of every k-mer of ``k = 1..max_k`` on the given strand (the wide part), standardised by a batch
norm without affine weights (the running mean and variance of training, like the k-mer logistic
regression's standardiser), then one linear layer whose logits are added to the deep part's.
GC content, CpG depletion and other composition signals are then one linear read-out away, as
they are for the k-mer LR, instead of something the convolutions and attention must rebuild.

Frequencies are counted on token ids: a k-mer is counted where all of its ``k`` tokens are the
single-base tokens A, C, G, T (:data:`BASE_IDS`, the ids every bigbird_dna one-base-per-token
tokenizer gives them); N, IUPAC codes, [CLS], [SEP] and padding start no k-mer and end every run.
So the path needs a tokenizer with one base per token (``tokenizer=char``): ``auto`` turns it on
with one and off with any other (:func:`resolve_composition`). It reads ids, not the encoder's
states, so gradient attributions (which differentiate the token vectors) do not see it;
in-silico mutagenesis does.

Two ways to learn it (``task.head.composition_fit``, :data:`FITS`): ``joint``
(:class:`KmerComposition`), a zero-initialised linear layer trained with the network; or ``first``
(:class:`FittedKmerComposition`), a k-mer logistic regression fitted on the training split before
the network trains and then fixed, so the network learns what composition does not explain, from
the LR's logits onwards (stacking).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.bpe import ALPHABET, SPECIAL_TOKENS, DNATokenizer
from bigbird_dna.tokenizer.specials import per_character_ids

# The ids of A, C, G, T: after the 5 special tokens, the alphabet starts with ACGT.
BASE_IDS = tuple(len(SPECIAL_TOKENS) + ALPHABET.index(base) for base in "ACGT")
MAX_COMPOSITION_K = 6
FITS = ("joint", "first")
# task.head.composition=auto: this longest k-mer with a one-base-per-token tokenizer, none with any other
AUTO_COMPOSITION_K = 5


def num_composition_features(max_k: int) -> int:
    """Features of ``k = 1..max_k``: ``4 + 16 + ... + 4**max_k``."""
    return sum(4 ** k for k in range(1, max_k + 1))


def kmer_frequencies(input_ids: torch.Tensor, max_k: int) -> torch.Tensor:
    """``input_ids [B, T]`` -> float32 ``[B, num_composition_features(max_k)]``.

    Per ``k``, the counts of the ``4**k`` k-mers (A=0, C=1, G=2, T=3, first base most significant)
    over every window of ``k`` consecutive base tokens, divided by the number of such windows
    (a sequence without one gets zeros). Blocks are ordered ``k = 1, 2, ...``.
    """
    first = BASE_IDS[0]
    base = input_ids - first  # [B, T]; 0..3 for A, C, G, T
    is_base = (base >= 0) & (base < 4)
    base = base.clamp(0, 3)
    blocks = []
    for k in range(1, max_k + 1):
        span = input_ids.shape[1] - k + 1
        counts = torch.zeros(input_ids.shape[0], 4 ** k, device=input_ids.device)
        if span > 0:
            code, valid = torch.zeros_like(base[:, :span]), torch.ones_like(is_base[:, :span])
            for j in range(k):
                code = code * 4 + base[:, j:j + span]
                valid = valid & is_base[:, j:j + span]
            counts.scatter_add_(1, code, valid.float())
        blocks.append(counts / counts.sum(1, keepdim=True).clamp(min=1))
    return torch.cat(blocks, dim=1)


def checked_k(max_k: int) -> int:
    """``max_k`` if it is a longest k-mer the path can count (``1..MAX_COMPOSITION_K``), else an
    :class:`InputError` naming ``task.head.composition``."""
    if not 1 <= max_k <= MAX_COMPOSITION_K:
        raise InputError(f"task.head.composition={max_k}: choose the longest k-mer from 1 to "
                         f"{MAX_COMPOSITION_K} (or 0 for no composition path).")
    return max_k


class KmerComposition(nn.Module):
    """k-mer frequencies -> standardised -> linear: logits ``[B, num_labels]`` from ``input_ids [B, T]``.

    The linear layer starts at zero, so an untrained composition path adds nothing.

    Args:
        max_k: the longest k-mer, ``1..MAX_COMPOSITION_K``.
        num_labels: the head's outputs.
    """

    def __init__(self, max_k: int, num_labels: int):
        super().__init__()
        self.max_k = checked_k(max_k)
        features = num_composition_features(max_k)
        self.register_buffer("running_mean", torch.zeros(features))
        self.register_buffer("running_var", torch.ones(features))
        self.linear = nn.Linear(features, num_labels, bias=False)
        nn.init.zeros_(self.linear.weight)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        frequencies = kmer_frequencies(input_ids, self.max_k)
        # a training batch of one sequence has no variance of its own: it uses the running statistics
        per_batch = self.training and frequencies.shape[0] > 1
        standardised = F.batch_norm(frequencies, self.running_mean, self.running_var, training=per_batch)
        return self.linear(standardised.to(self.linear.weight.dtype))


class FittedKmerComposition(nn.Module):
    """k-mer frequencies -> ``(x - mean) / std`` -> ``x @ weight.T + bias``: logits ``[B, num_labels]``
    from ``input_ids [B, T]``, with every number set by :meth:`load_fit` from a fitted k-mer logistic
    regression (``task.head.composition_fit=first``) and then fixed.

    Buffers only, no parameter: the optimiser, its weight decay and DDP's gradient reduction never
    touch them, and they are saved with every checkpoint and export. Until fitted it adds nothing.
    ``fitted`` records the fit, so a resumed run does not fit again.

    Args:
        max_k: the longest k-mer, ``1..MAX_COMPOSITION_K``; the fit may use ``k = 1..k' <= max_k``.
        num_labels: the head's outputs.
    """

    def __init__(self, max_k: int, num_labels: int):
        super().__init__()
        self.max_k = checked_k(max_k)
        features = num_composition_features(max_k)
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("std", torch.ones(features))
        self.register_buffer("weight", torch.zeros(num_labels, features))
        self.register_buffer("bias", torch.zeros(num_labels))
        self.register_buffer("fitted", torch.tensor(False))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        standardised = (kmer_frequencies(input_ids, self.max_k) - self.mean) / self.std
        return standardised @ self.weight.T + self.bias

    def load_fit(self, mean: torch.Tensor, std: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> None:
        """Take a fitted model on the first ``F' <= F`` feature columns (those of ``k = 1..k'``):
        ``mean, std [F']``, ``weight [F', num_labels]`` (the LR's layout), ``bias [num_labels]``;
        the columns beyond get weight 0."""
        columns = mean.shape[0]
        with torch.no_grad():
            self.mean.zero_()[:columns] = mean
            self.std.fill_(1.0)[:columns] = std
            self.weight.zero_()[:, :columns] = weight.T
            self.bias.copy_(bias)
            self.fitted.fill_(True)


def counts_bases(tokenizer: DNATokenizer) -> bool:
    """True when every base is one token (:func:`~bigbird_dna.tokenizer.specials.per_character_ids`)
    and A, C, G, T have the ids :data:`BASE_IDS`."""
    table = per_character_ids(tokenizer)
    return table is not None and tuple(int(table[ord(base)]) for base in "ACGT") == BASE_IDS


def resolve_composition(setting: int | str | None, tokenizer: DNATokenizer | None) -> int:
    """The longest k-mer of ``task.head.composition``: ``auto`` is :data:`AUTO_COMPOSITION_K` with a
    one-base-per-token tokenizer (or none given) and 0 with any other; a number is checked against
    the tokenizer. ``None`` (exports from before the setting) is 0.

    Raises:
        InputError: a number above 0 with a tokenizer of multi-base tokens, or a setting that is neither.
    """
    if setting is None:
        return 0
    base_tokens = tokenizer is None or counts_bases(tokenizer)
    if setting == "auto":
        return AUTO_COMPOSITION_K if base_tokens else 0
    if isinstance(setting, bool) or not isinstance(setting, int):
        raise InputError(f"task.head.composition={setting!r}: give the longest k-mer (1 to {MAX_COMPOSITION_K}), "
                         "0 for none, or auto.")
    if setting and not base_tokens:
        raise InputError(f"task.head.composition={setting} counts k-mers of single-base tokens, and this tokenizer "
                         "has multi-base tokens; use tokenizer=char, or set task.head.composition=0 (or auto).")
    return setting
