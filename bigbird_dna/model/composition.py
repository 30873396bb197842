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
the LR's logits onwards (stacking). Stacking is cross-fitted: during training each sequence gets
the logits of an LR fitted without its fold (:data:`CROSS_FIT_FOLDS` folds, assigned by
:func:`sequence_folds`), as a held-out sequence would, instead of the full fit's, which is
optimistic on the rows it was fitted on and so leaves the network too little to learn there;
validation, test, prediction and exports use the full fit.
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
# out-of-fold LRs of the fitted path's training logits, and the k-mers whose counts assign the folds
CROSS_FIT_FOLDS = 5
FOLD_HASH_K = 4


def num_composition_features(max_k: int) -> int:
    """Features of ``k = 1..max_k``: ``4 + 16 + ... + 4**max_k``."""
    return sum(4 ** k for k in range(1, max_k + 1))


def kmer_counts(input_ids: torch.Tensor, k: int) -> torch.Tensor:
    """``input_ids [B, T]`` -> float32 ``[B, 4**k]``: the counts of each k-mer (A=0, C=1, G=2, T=3,
    first base most significant) over every window of ``k`` consecutive base tokens."""
    base = input_ids - BASE_IDS[0]  # [B, T]; 0..3 for A, C, G, T
    is_base = (base >= 0) & (base < 4)
    base = base.clamp(0, 3)
    span = input_ids.shape[1] - k + 1
    counts = torch.zeros(input_ids.shape[0], 4 ** k, device=input_ids.device)
    if span > 0:
        code, valid = torch.zeros_like(base[:, :span]), torch.ones_like(is_base[:, :span])
        for j in range(k):
            code = code * 4 + base[:, j:j + span]
            valid = valid & is_base[:, j:j + span]
        counts.scatter_add_(1, code, valid.float())
    return counts


def kmer_frequencies(input_ids: torch.Tensor, max_k: int) -> torch.Tensor:
    """``input_ids [B, T]`` -> float32 ``[B, num_composition_features(max_k)]``.

    Per ``k``, the :func:`kmer_counts` divided by the number of windows (a sequence without one
    gets zeros). Blocks are ordered ``k = 1, 2, ...``.
    """
    blocks = [kmer_counts(input_ids, k) for k in range(1, max_k + 1)]
    return torch.cat([counts / counts.sum(1, keepdim=True).clamp(min=1) for counts in blocks], dim=1)


def _strand_symmetric_keys(k: int) -> torch.Tensor:
    """int64 ``[4**k]``: a pseudo-random key per k-mer, equal for a k-mer and its reverse complement."""
    index = torch.arange(4 ** k)
    digits = torch.stack([(index // 4 ** j) % 4 for j in range(k)], dim=1)  # last base first
    reverse_complement = ((3 - digits) * 4 ** torch.arange(k - 1, -1, -1)).sum(1)
    canonical = torch.minimum(index, reverse_complement)
    return (canonical * 40503 + 12345) % 65521 + 1


def sequence_folds(input_ids: torch.Tensor, folds: int = CROSS_FIT_FOLDS) -> torch.Tensor:
    """``input_ids [B, T]`` -> int64 ``[B]`` in ``0..folds-1``: a fold per sequence from a hash of
    its exact :data:`FOLD_HASH_K`-mer counts, so that a sequence, its duplicates and its reverse
    complement always share a fold, however they are batched or padded."""
    keys = _strand_symmetric_keys(FOLD_HASH_K).to(input_ids.device)
    hashed = (kmer_counts(input_ids, FOLD_HASH_K).long() * keys).sum(1) % 1_000_003
    return (hashed * 2_654_435_761 % 4_294_967_291) % folds


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

    In training mode, where ``folds > 0`` (cross-fitted), each sequence gets the logits of the LR
    fitted without its :func:`sequence_folds` fold (``fold_weight [folds, num_labels, F]``,
    ``fold_bias [folds, num_labels]``, on the same standardiser); in eval mode, the full fit's.
    Checkpoints from before cross-fitting load with ``folds = 0``.

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
        self.register_buffer("folds", torch.tensor(0))
        self.register_buffer("fold_weight", torch.zeros(CROSS_FIT_FOLDS, num_labels, features))
        self.register_buffer("fold_bias", torch.zeros(CROSS_FIT_FOLDS, num_labels))

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        standardised = (kmer_frequencies(input_ids, self.max_k) - self.mean) / self.std
        full = standardised @ self.weight.T + self.bias
        if not self.training:
            return full
        # folds is 0 or CROSS_FIT_FOLDS: chosen on the device, with no host sync per step
        fold = sequence_folds(input_ids, CROSS_FIT_FOLDS)
        out_of_fold = torch.einsum("bf,blf->bl", standardised, self.fold_weight[fold]) + self.fold_bias[fold]
        return torch.where(self.folds > 0, out_of_fold, full)

    def load_fit(self, mean: torch.Tensor, std: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                 fold_weights: list[torch.Tensor] = (), fold_biases: list[torch.Tensor] = ()) -> None:
        """Take a fitted model on the first ``F' <= F`` feature columns (those of ``k = 1..k'``):
        ``mean, std [F']``, ``weight [F', num_labels]`` (the LR's layout), ``bias [num_labels]``;
        the columns beyond get weight 0. ``fold_weights`` and ``fold_biases`` (as many as
        :data:`CROSS_FIT_FOLDS`, or none) are the out-of-fold fits in the same layout."""
        columns = mean.shape[0]
        if len(fold_weights) not in (0, CROSS_FIT_FOLDS) or len(fold_biases) != len(fold_weights):
            raise ValueError(f"give {CROSS_FIT_FOLDS} out-of-fold fits or none, not {len(fold_weights)}")
        with torch.no_grad():
            self.mean.zero_()[:columns] = mean
            self.std.fill_(1.0)[:columns] = std
            self.weight.zero_()[:, :columns] = weight.T
            self.bias.copy_(bias)
            self.fold_weight.zero_()
            self.fold_bias.zero_()
            for fold, (fold_weight, fold_bias) in enumerate(zip(fold_weights, fold_biases)):
                self.fold_weight[fold, :, :columns] = fold_weight.T
                self.fold_bias[fold] = fold_bias
            self.folds.fill_(len(fold_weights))
            self.fitted.fill_(True)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        # checkpoints and exports from before cross-fitting: no out-of-fold fits, the full fit throughout
        if prefix + "fitted" in state_dict and prefix + "folds" not in state_dict:
            state_dict = {**state_dict, prefix + "folds": torch.tensor(0), prefix + "fold_weight":
                          torch.zeros_like(self.fold_weight), prefix + "fold_bias": torch.zeros_like(self.fold_bias)}
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


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
