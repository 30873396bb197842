"""Gradient attributions at the last per-token representation, spread back onto bases.

Both methods work on ``x_t``, the encoder's last representation with one vector per input token
before anything mixes positions (:attr:`~bigbird_dna.model.encoder.BigBirdEncoder.attribution_layer`):
the embedding block's output (the token's vector plus, for absolute positions, its position's,
layer-normalised), or with a convolutional stem the token vectors themselves. The baseline ``b_t``
is the same representation of **the average base**: the mean token vector of the vocabulary's
tokens spelled only with A, C, G and T (with one base per token, the mean of the four letters), put
in place of every sequence token (``[CLS]`` and ``[SEP]`` keep theirs, so they get no
attribution). Not raw token vectors before a layer norm and not zero: the norm makes the model
blind to a token vector's scale, so a path from zero would change nothing until its last steps,
and a gradient times a raw vector would be zero for every token.

- ``gradient_x_input``: ``(x_t - b_t) . g_t`` with ``g_t`` the target's gradient at ``x``.
- ``integrated_gradients``: ``(x_t - b_t) . g_t`` with ``g_t`` the gradient averaged along the
  straight path from ``b`` to ``x`` (captum's ``IntegratedGradients``, Gauss-Legendre,
  ``multiply_by_inputs=False`` so that it returns ``g_t``). The scores sum to ``f(x) - f(b)`` up to
  the quadrature error (completeness): by default each sequence gets 50 path points, doubled until
  they sum within 1% (at most 800); an explicit ``steps`` is used as given.

A token's score ``sum_h (x_t - b_t)_h g_{t,h}`` is shared equally by the bases it spells
(:func:`~bigbird_dna.attribution.bases.spread_over_bases`), so per-base scores sum to the token
scores for char, k-mer and BPE tokenizers alike.

**Per letter** (``[L, 4]``, the hypothetical contributions TF-MoDISco reads): with one base per
token, column ``c`` of base ``i`` is ``(x_i(c) - b_i) . g_i``, ``x_i(c)`` the block's output for
letter ``c`` at that position: what base ``i`` would contribute as letter ``c`` (the observed
letter's column is its per-base score). With multi-base tokens there is no per-letter
alternative: the per-base score sits in the observed letter's column.

Sequences are grouped by token length, so no row is padded.
"""

from __future__ import annotations

import logging
from itertools import groupby
from typing import Callable

import torch

from bigbird_dna.attribution.bases import LETTERS, one_hot, spread_over_bases
from bigbird_dna.attribution.targets import Target, target_function
from bigbird_dna.errors import require_extra
from bigbird_dna.tokenizer import DNATokenizer

GRADIENT_METHODS = ("gradient_x_input", "integrated_gradients")
# Integrated gradients' default path points: from FIRST_STEPS, doubled per sequence up to MAX_STEPS
# until its scores sum to f(x) - f(baseline) within COMPLETENESS (relative). Max pooling and GELU
# kinks make the path's integrand rough, so a fixed count would be wasteful or wrong.
FIRST_STEPS, MAX_STEPS, COMPLETENESS = 50, 800, 0.01
log = logging.getLogger(__name__)


def average_base(module: torch.nn.Module, tokenizer: DNATokenizer) -> torch.Tensor:
    """``[H]``: the mean token embedding of the tokens spelled only with A, C, G and T."""
    special = tokenizer.special_ids
    ids = sorted(i for token, i in tokenizer.backend.get_vocab().items()
                 if i not in special and token and set(token) <= set(LETTERS))
    return module.encoder.token_embedding.weight.detach()[ids].mean(0)


def block_outputs(module: torch.nn.Module, tokenizer: DNATokenizer,
                  input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, b)``, both ``[B, T, H]``: the attribution layer's output for ``input_ids [B, T]``, and
    the baseline's: every non-special token's vector replaced by :func:`average_base`."""
    encoder = module.encoder
    with torch.no_grad():
        vectors = encoder.token_embedding(input_ids)
        special = torch.isin(input_ids, torch.tensor(sorted(tokenizer.special_ids), device=input_ids.device))
        average = torch.where(special[..., None], vectors, average_base(module, tokenizer))
        return encoder.attribution_vectors(input_ids), encoder.attribution_vectors(input_ids, average)


def letter_outputs(module: torch.nn.Module, tokenizer: DNATokenizer, length: int) -> torch.Tensor | None:
    """``[T, 4, H]``: the attribution layer's output at each of ``length`` positions for the tokens
    ``A, C, G, T``; ``None`` unless each letter is a token of its own."""
    ids = [tokenizer.encode(letter) for letter in LETTERS]
    if not all(len(i) == 1 for i in ids):
        return None
    encoder = module.encoder
    letters = torch.tensor([i[0] for i in ids], device=encoder.token_embedding.weight.device)[:, None]
    with torch.no_grad():
        return encoder.attribution_vectors(letters.expand(4, length)).transpose(0, 1)


def from_block_output(module: torch.nn.Module, target: Target) -> Callable[[torch.Tensor], torch.Tensor]:
    """``x [B, T, H] -> [B]``: the target's value with the attribution layer's output replaced by
    ``x`` (unpadded rows), with autograd."""
    value = target_function(module, target)
    layer = module.encoder.attribution_layer

    def run(x: torch.Tensor) -> torch.Tensor:
        handle = layer.register_forward_hook(lambda _module, _inputs, _output: x)
        try:
            return value(torch.zeros(x.shape[:2], dtype=torch.long, device=x.device))
        finally:
            handle.remove()

    return run


def block_gradients(module: torch.nn.Module, x: torch.Tensor, baseline: torch.Tensor, target: Target,
                    method: str, steps: int | None, batch_size: int) -> torch.Tensor:
    """``g [B, T, H]``: the target's gradient at ``x``, or averaged along the path from ``baseline``
    to ``x`` with ``steps`` points; ``steps=None``: :data:`FIRST_STEPS`, doubled for the rows whose
    scores miss ``f(x) - f(baseline)`` by more than :data:`COMPLETENESS` (up to :data:`MAX_STEPS`)."""
    forward = from_block_output(module, target)
    if method == "gradient_x_input":
        x = x.detach().requires_grad_(True)
        (grads,) = torch.autograd.grad(forward(x).sum(), x)
        return grads
    captum_attr = require_extra("captum.attr", "explain", "integrated gradients")
    explainer = captum_attr.IntegratedGradients(forward, multiply_by_inputs=False)
    if steps is not None:
        return explainer.attribute(x, baselines=baseline, n_steps=steps, internal_batch_size=batch_size)
    with torch.no_grad():
        gap = (forward(x) - forward(baseline)).float()
    grads = torch.empty_like(x)
    todo = torch.arange(len(x), device=x.device)
    steps = FIRST_STEPS
    while len(todo):
        grads[todo] = explainer.attribute(x[todo], baselines=baseline[todo], n_steps=steps,
                                          internal_batch_size=batch_size)
        error = (((x[todo] - baseline[todo]) * grads[todo]).sum((1, 2)) - gap[todo]).abs()
        missed = error > COMPLETENESS * gap[todo].abs() + 1e-5
        if steps >= MAX_STEPS:
            if missed.any():
                log.warning("integrated gradients: %d sequence(s) still miss completeness by more than %.0f%% at "
                            "%d steps; their scores are approximate", int(missed.sum()), COMPLETENESS * 100, steps)
            break
        todo, steps = todo[missed], steps * 2
    return grads


def gradient_attributions(module: torch.nn.Module, tokenizer: DNATokenizer, encode: Callable, seqs: list[str],
                          target: Target, method: str, steps: int | None, batch_size: int,
                          tick: Callable[[int], None] = lambda n: None) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``(per_base [L], per_letter [L, 4])`` float32 on the CPU for each sequence, in order.

    ``encode(seqs) -> (input_ids [B, T], mask [B, T])`` is the model's ``[CLS] tokens [SEP]``
    encoding (refusing sequences longer than its context).
    """
    device = next(module.parameters()).device
    if getattr(getattr(module, "head", None), "composition", None) is not None:
        log.info("%s explains the pooled states only: the head's composition path reads the letters, not token "
                 "vectors, so its share is not in these scores (method=ism sees it).", method)
    ids, mask = encode(seqs)
    lengths = mask.sum(1).tolist()
    offsets = tokenizer.offsets(seqs)
    out: list[tuple[torch.Tensor, torch.Tensor]] = [(torch.empty(0), torch.empty(0, 4))] * len(seqs)
    order = sorted(range(len(seqs)), key=lambda i: lengths[i])
    for length, group in groupby(order, key=lambda i: lengths[i]):
        group = list(group)
        letters = letter_outputs(module, tokenizer, length)  # [T, 4, H] or None
        for first in range(0, len(group), batch_size):
            chunk = group[first:first + batch_size]
            rows = ids[chunk, :length].to(device)
            x, baseline = block_outputs(module, tokenizer, rows)
            grads = block_gradients(module, x, baseline, target, method, steps, batch_size).float()
            token_scores = ((x - baseline) * grads).sum(-1).cpu()  # [B, T]
            per_letter = None if letters is None else \
                torch.einsum("tch,bth->btc", letters, grads).cpu() - (baseline * grads).sum(-1, keepdim=True).cpu()
            for row, i in enumerate(chunk):
                seq, tokens = seqs[i], offsets[i]
                base = spread_over_bases(token_scores[row, 1:length - 1], tokens, len(seq))
                if per_letter is not None and all(b - a == 1 for a, b in tokens):
                    letter = per_letter[row, 1:length - 1].clone()
                else:
                    letter = one_hot(seq) * base[:, None]
                out[i] = (base, letter)
            tick(len(chunk))
    return out
