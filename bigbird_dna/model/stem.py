"""The hybrid encoder's convolutional stem (``model.stem``): a bank of motif detectors in front of
the BigBird layers, optionally pooling, and the path back to every input token.

A BigBird layer's own convolution is depthwise (each channel alone, 9 tokens): no unit of the plain
encoder detects a 15-20 bp motif as a CNN's first layer does. The stem is that first layer, as in
Basenji's and Enformer's convolution towers: full convolutions (all channels mixed) of ``kernel``
tokens over the token embeddings, batch-normalised per channel (:class:`MaskedBatchNorm`), then
``blocks`` residual convolution blocks, then, with ``pool``
> 1, a max pool over groups of ``pool`` tokens, so the BigBird layers read ``pool`` times more
bases in the same number of tokens. With char tokens, a token is a base.

**Rows.** Every row is ``[CLS] body [SEP]`` right-padded (:mod:`bigbird_dna.tokenizer.specials`):
``[CLS]`` at position 0, ``[SEP]`` at the last real position (``attention_mask``; ``None``: the last
position). The specials bypass the stem: the convolutions read the body only (zeros at the
specials, padding and past the ends, re-zeroed before every convolution, so padding never leaks
into real positions and a row's numbers do not depend on how far it is padded), and the BigBird
layers read ``[CLS] g_1 .. g_G [SEP]``, padded, where group ``g_j`` pools body tokens
``[(j-1) * pool, j * pool)`` (0-based) and is real when any of them is: a row of ``n`` body tokens
has ``ceil(n / pool)`` groups, ``[SEP]`` right after them. The shapes are static (a row's length is
a tensor, never read on the host), so CUDA graphs replay the stem.

**Back to every input token** (``pool`` > 1; U-Net style): each input position takes its BigBird
token's state (its group's; ``[CLS]``'s and ``[SEP]``'s their own), and a residual convolution block
adds the stem's state at that position (the skip connection), so each base's output sees its own
base and its neighbours at full resolution. The encoder's output is therefore at the input's
resolution, ``[B, T, hidden]``, whatever ``pool``: the MLM head, likelihood scores and every pooling
of the classification heads read it as they read the plain encoder's. The block runs over every
real position, specials included, so that every parameter shapes a ``[CLS]`` classifier's logits
(DDP rejects unused ones). With ``pool`` = 1 the BigBird tokens are the input tokens and there is
no upsampling path.
"""

from __future__ import annotations

import torch
from torch import nn

from bigbird_dna.model.config import EncoderConfig


class MaskedBatchNorm(nn.Module):
    """Batch normalisation of each channel of ``[B, T, C]`` over the positions in ``keep`` only.

    A motif detector fires at few positions; normalising each channel over the batch's positions
    (as a CNN's first layer does, Basenji and Enformer included) makes those rare peaks stand out,
    where a LayerNorm across the channels of one position hides them. On the planted-motif windows
    (:mod:`bigbird_dna.demo.planted_motif`; a one-off comparison of the stem alone, without
    attention layers, batches of 32, not kept in ``benchmarks/results``) a LayerNorm here left val
    AUROC at 0.6 after 150 steps; this norm reached 0.92 in 50. Training normalises with the statistics of
    the batch's kept positions (padding, ``[CLS]`` and ``[SEP]`` never count) and updates running
    ones; evaluation and inference use the running statistics, so a row's numbers then never
    depend on its batch-mates. Computed in float32.
    """

    def __init__(self, channels: int, momentum: float = 0.1, eps: float = 1e-5):
        super().__init__()
        self.momentum, self.eps = momentum, eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.register_buffer("running_mean", torch.zeros(channels))
        self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        """``x [B, T, C]``, ``keep [B or 1, T]`` bool (``None``: every position) -> ``[B, T, C]``."""
        values = x.float()
        if self.training:
            weights = torch.ones_like(values[..., :1]) if keep is None else \
                keep.expand(x.shape[:2]).unsqueeze(-1).to(values.dtype)  # [B, T, 1]
            count = weights.sum().clamp(min=2.0)
            mean = (values * weights).sum((0, 1)) / count
            var = ((values - mean).square() * weights).sum((0, 1)) / count
            with torch.no_grad():
                self.running_mean.lerp_(mean, self.momentum)
                self.running_var.lerp_(var * count / (count - 1), self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        return ((values - mean) * torch.rsqrt(var + self.eps) * self.weight + self.bias).to(x.dtype)


class ResidualConvBlock(nn.Module):
    """``x + drop(conv(GELU(LN(x))))``: a full convolution over ``kernel`` positions, all channels mixed.

    Positions outside ``keep`` are zeroed before the convolution, so they contribute nothing.
    """

    def __init__(self, channels: int, kernel: int, dropout: float, eps: float):
        super().__init__()
        self.norm = nn.LayerNorm(channels, eps=eps)
        self.conv = nn.Conv1d(channels, channels, kernel, padding=kernel // 2)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        """``x [B, T, C]``, ``keep [B, T]`` bool (``None``: every position) -> ``[B, T, C]``."""
        return x + self.dropout(conv_over(self.conv, nn.functional.gelu(self.norm(x)), keep))


def conv_over(conv: nn.Conv1d, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
    """``conv`` over ``x [B, T, C_in]`` with positions outside ``keep [B, T]`` zeroed -> ``[B, T, C_out]``."""
    if keep is not None:
        x = x * keep.unsqueeze(-1).to(x.dtype)
    return conv(x.transpose(1, 2)).transpose(1, 2)


class HybridStem(nn.Module):
    """The stem (:meth:`down`: input tokens -> BigBird tokens) and its way back (:meth:`up`); see
    the module docstring for the conventions.

    Args:
        config: the encoder's config; ``config.stem`` is set.
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        stem, size, eps = config.stem, config.hidden_size, config.layer_norm_eps
        self.pool = stem.pool
        self.motifs = nn.Conv1d(size, stem.channels, stem.kernel, padding=stem.kernel // 2)
        self.motif_norm = MaskedBatchNorm(stem.channels)
        self.blocks = nn.ModuleList(ResidualConvBlock(stem.channels, stem.kernel, config.dropout, eps)
                                    for _ in range(stem.blocks))
        self.to_tokens = nn.Linear(stem.channels, size)
        self.decoder = None
        if self.pool > 1:
            self.decoder = nn.ModuleDict({
                "from_tokens": nn.Linear(size, stem.channels),
                "block": ResidualConvBlock(stem.channels, stem.kernel, config.dropout, eps),
                "to_output": nn.Linear(stem.channels, size),
            })

    def lengths(self, attention_mask: torch.Tensor | None, seq: int, device: torch.device) -> torch.Tensor:
        """Real tokens of each row, ``[B]`` (``[1]`` = ``seq`` when ``attention_mask`` is None)."""
        if attention_mask is None:
            return torch.full((1,), seq, dtype=torch.long, device=device)
        return attention_mask.sum(1)

    def motif_scores(self, embedded: torch.Tensor, body: torch.Tensor,
                     tokens: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """The motif detectors over the body, before their norm: ``[B, T, channels]``.

        ``embedded [B, T, hidden]`` are the token embeddings, ``body [B or 1, T]`` the positions
        read. ``tokens``: ``(input_ids [B, T], embedding weight [vocab, hidden])`` whose lookup
        ``embedded`` is; then the same convolution runs over the tokens' one-hot codes with the
        embedding folded into its weights (``[channels, vocab, kernel]``). The numbers are equal up
        to rounding. With a vocabulary much narrower than ``hidden`` (9 char tokens against 128) the
        convolution's forward and backward took a twentieth of the time, and a training step of the
        tiny hybrid (batches of 32 rows of 250 bp, 2 CPU threads) went from 5.0 to 5.7 steps/s, in a
        one-off probe, not a committed results file.
        """
        if tokens is None:
            return conv_over(self.motifs, embedded, body)
        input_ids, weight = tokens
        folded = torch.einsum("ohk,vh->ovk", self.motifs.weight, weight)
        one_hot = nn.functional.one_hot(input_ids, weight.shape[0]).to(folded.dtype)
        one_hot = one_hot * body.unsqueeze(-1).to(folded.dtype)
        return nn.functional.conv1d(one_hot.transpose(1, 2), folded, self.motifs.bias,
                                    padding=self.motifs.padding).transpose(1, 2)

    def down(self, embedded: torch.Tensor, attention_mask: torch.Tensor | None,
             tokens: tuple[torch.Tensor, torch.Tensor] | None = None
             ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """Input token embeddings -> the BigBird layers' input.

        Args:
            embedded: ``[B, T, hidden]``, the embeddings of ``[CLS] body [SEP]`` rows, right-padded.
            attention_mask: ``[B, T]`` bool, True on real tokens; ``None``: every token is real.
            tokens: as :meth:`motif_scores`'s (``None``: convolve ``embedded``).

        Returns:
            ``(tokens [B, 2 + G, hidden], mask [B, 2 + G] or None, skip [B, T, channels])`` with
            ``G = ceil((T - 2) / pool)``: ``[CLS] g_1 .. g_G [SEP]`` per row (padded), their mask
            (``None`` when ``attention_mask`` is), and the stem's states at the input resolution
            (zero outside the body).
        """
        batch, seq, size = embedded.shape
        position = torch.arange(seq, device=embedded.device)
        length = self.lengths(attention_mask, seq, embedded.device)  # [B] or [1]
        body = (position >= 1) & (position < length.unsqueeze(1) - 1)  # [B or 1, T]
        x = nn.functional.gelu(self.motif_norm(self.motif_scores(embedded, body, tokens), body))
        for block in self.blocks:
            x = block(x, body)
        skip = x * body.unsqueeze(-1).to(x.dtype)  # [B, T, C]

        groups = -(-(seq - 2) // self.pool)
        spare = groups * self.pool - (seq - 2)
        inner = nn.functional.pad(skip[:, 1:seq - 1], (0, 0, 0, spare))  # [B, G * pool, C]
        inner_body = nn.functional.pad(body[:, 1:seq - 1], (0, spare)).view(body.shape[0], groups, self.pool)
        pooled = inner.view(batch, groups, self.pool, -1).masked_fill(~inner_body.unsqueeze(-1),
                                                                     torch.finfo(inner.dtype).min).amax(2)
        pooled = pooled * inner_body.any(2).unsqueeze(-1).to(pooled.dtype)  # [B, G, C]; 0 for an empty group

        sep_at = (length - 2 + self.pool - 1) // self.pool + 1  # [B or 1]: after the row's last group
        sep = embedded.gather(1, (length - 1).view(-1, 1, 1).expand(batch, 1, size))  # [B, 1, hidden]
        tokens = torch.cat([embedded[:, :1], self.to_tokens(pooled), embedded.new_zeros(batch, 1, size)], dim=1)
        slot = torch.arange(groups + 2, device=embedded.device)
        tokens = torch.where((slot == sep_at.unsqueeze(1)).unsqueeze(-1), sep, tokens)
        mask = None if attention_mask is None else slot <= sep_at.unsqueeze(1)
        return tokens, mask, skip

    def up(self, hidden: torch.Tensor, skip: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """The BigBird layers' states ``[B, 2 + G, hidden]`` -> ``[B, T, hidden]`` at every input token.

        ``skip``: :meth:`down`'s ``[B, T, channels]``; ``attention_mask``: the input's ``[B, T]``. With
        ``pool`` = 1 the positions already match and ``hidden`` is returned as it is.
        """
        if self.decoder is None:
            return hidden
        batch, seq, _ = skip.shape
        position = torch.arange(seq, device=skip.device)
        length = self.lengths(attention_mask, seq, skip.device)
        sep_at = (length - 2 + self.pool - 1) // self.pool + 1
        source = (position + self.pool - 1) // self.pool  # [T]: [CLS] 0, then body token i in group ceil(i / pool)
        source = torch.where(position >= length.unsqueeze(1) - 1, sep_at.unsqueeze(1), source)  # [SEP], padding
        up = hidden.gather(1, source.expand(batch, seq).unsqueeze(-1).expand(-1, -1, hidden.shape[-1]))
        detail = self.decoder["block"](self.decoder["from_tokens"](up) + skip, attention_mask)
        return up + self.decoder["to_output"](detail)
