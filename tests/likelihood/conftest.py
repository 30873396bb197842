"""Known truths for the likelihood tests: the exact masked marginals of a Markov chain, MLM "oracle"
modules that stand in for a trained encoder and head, and small MLM exports.

The chain of order ``k`` starts with ``k`` uniform bases and then follows its transitions, so
``p(x) = 4**-k * prod_{j >= k} P(x_j | x_{j-k..j-1})`` and, by Bayes over the factors that hold
``x_t``, ``p(x_t = a | every other base) ∝ prod_{j = max(t, k)}^{min(t + k, L - 1)} P(x_j | ...)``
with ``x_t = a``. Away from the ends (``k <= t < L - k``) this is the chain's masked marginal given
its ``k`` bases on each side, whatever its start distribution.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bigbird_dna.demo.markov_genome import MarkovSource
from bigbird_dna.model.outputs import MASKED_LM, ModelOutput
from bigbird_dna.tokenizer import ALPHABET, SPECIAL_TOKENS
from tests.conftest import LAMBDA, compose

FIRST_BASE_ID = len(SPECIAL_TOKENS)  # A, C, G, T are ids 5..8 in every bigbird_dna tokenizer


def markov_masked_log_probs(source: MarkovSource, seq: str, positions=None) -> np.ndarray:
    """``[len(positions), 4]``: natural-log ``p(x_t = A/C/G/T | the rest of seq)`` (module docstring);
    ``seq`` is upper-case ACGT, ``positions`` default to every base."""
    k, log_t = source.order, np.log(source.transitions)
    codes = ["ACGT".index(c) for c in seq]
    positions = range(len(seq)) if positions is None else positions
    out = np.zeros((len(positions), 4))
    for row, t in enumerate(positions):
        for base in range(4):
            x = codes[max(0, t - k):t] + [base] + codes[t + 1:t + k + 1]  # x[i] is seq[max(0, t-k) + i]
            shift = max(0, t - k)
            for j in range(max(t, k), min(t + k, len(seq) - 1) + 1):
                context = sum(x[j - k + i - shift] * 4 ** (k - 1 - i) for i in range(k))
                out[row, base] += log_t[context, x[j - shift]]
    return out - np.logaddexp.reduce(out, axis=1, keepdims=True)


class _MarkovOracleEncoder(torch.nn.Module):
    """``hidden [B, T, vocab]``: at each row's one [MASK], the chain's exact log-probs given the row."""

    def __init__(self, source: MarkovSource, vocab_size: int, mask_id: int):
        super().__init__()
        self.source, self.vocab_size, self.mask_id = source, vocab_size, mask_id

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        hidden = torch.zeros(*ids.shape, self.vocab_size)
        for row in range(len(ids)):
            masked = (ids[row] == self.mask_id).nonzero()[:, 0].tolist()
            assert len(masked) == 1, f"per-base scoring must mask one token per row, got {masked}"
            length = ids.shape[1] if attention_mask is None else int(attention_mask[row].sum())  # None: no padding
            body = ids[row, 1:length - 1].tolist()  # between [CLS] and [SEP]
            seq = "".join(ALPHABET[i - FIRST_BASE_ID] if i != self.mask_id else "A" for i in body)
            logp = markov_masked_log_probs(self.source, seq, [masked[0] - 1])[0]
            hidden[row, masked[0]] = float("-inf")
            hidden[row, masked[0], FIRST_BASE_ID:FIRST_BASE_ID + 4] = torch.from_numpy(logp)
        return hidden


class _ConstantEncoder(torch.nn.Module):
    """``hidden [B, T, vocab]``: the same logits everywhere; records the [MASK] count of every row."""

    def __init__(self, logits: torch.Tensor, mask_id: int):
        super().__init__()
        self.logits, self.mask_id, self.masks_per_row = logits, mask_id, []

    def forward(self, ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        self.masks_per_row += (ids == self.mask_id).sum(1).tolist()
        return self.logits.expand(*ids.shape, -1)


class OracleMLM(torch.nn.Module):
    """An MLM task module (``encoder``, ``head``) whose encoder outputs logits and whose head is the identity."""

    def __init__(self, encoder: torch.nn.Module):
        super().__init__()
        self.encoder, self.head = encoder, torch.nn.Identity()
        self.output = ModelOutput(MASKED_LM)


def with_oracle(model, encoder: torch.nn.Module):
    """``model`` (a ``BigBirdDNA``) with its task module replaced by :class:`OracleMLM` over ``encoder``."""
    model.module = OracleMLM(encoder)
    return model


def markov_oracle(model, source: MarkovSource):
    return with_oracle(model, _MarkovOracleEncoder(source, model.tokenizer.vocab_size, model.tokenizer.mask_id))


def constant_oracle(model, logits: torch.Tensor):
    return with_oracle(model, _ConstantEncoder(logits, model.tokenizer.mask_id))


@pytest.fixture(scope="session")
def char_export(tmp_path_factory):
    """An untrained MLM export with one token per base (256-token context)."""
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.promoter.conftest import make_export

    return make_export(tmp_path_factory.mktemp("char") / "export", "mlm", char_tokenizer())


@pytest.fixture(scope="session")
def char_mlm_export(tmp_path_factory):
    """An MLM with one token per base trained for the tests' 4 fast steps on lambda (256-token context)."""
    from bigbird_dna.train import run

    run_dir = tmp_path_factory.mktemp("char_mlm") / "run"
    run(compose(["debug=fast", "tokenizer=char", f"data.fasta={LAMBDA}"], run_dir))
    return run_dir / "export"
