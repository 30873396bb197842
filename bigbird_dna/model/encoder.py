"""The BigBird encoder: token embeddings, then pre-LN Transformer layers whose self-attention runs
over a block-sparse graph. Positions are rotary (``model.position=rope``, applied to q and k in
every layer; see :mod:`bigbird_dna.model.rotary`) or the paper's learned absolute embeddings added
to the token embeddings (``absolute``).

Shapes: ``input_ids`` and ``attention_mask`` are ``[batch, seq]``; hidden states are
``[batch, seq, hidden]``. ``attention_mask`` is True for real tokens and False for padding;
``None`` means every token is real (as in Hugging Face models), which lets attention skip the
key-padding path. :func:`~bigbird_dna.tokenizer.specials.padding_mask_or_none` makes that choice on
the host, before a batch moves to the GPU, where checking the mask would cost a device sync.

Attention goes through one function, :func:`bigbird_dna.attention.block_sparse_attention`, so the
Triton kernel and the PyTorch backend are interchangeable (``model.attention.backend``).

With ``model.stem`` (the hybrid encoder), a convolutional stem of motif detectors
(:class:`~bigbird_dna.model.stem.HybridStem`) turns the token embeddings into the layers' input,
pooling ``model.stem.pool`` input tokens into each BigBird token, and brings the layers' states back
to every input token: inputs and outputs keep the shapes above, ``T`` up to
``config.max_input_tokens``; ``token_states`` gives the states at the BigBird tokens instead.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from bigbird_dna.attention import attend_query_rows, block_sparse_attention
from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.layout_registry import LayoutRegistry
from bigbird_dna.model.rotary import RotaryEmbedding
from bigbird_dna.model.stem import HybridStem


class BlockSparseSelfAttention(nn.Module):
    """Multi-head self-attention over the block layout of one layer."""

    def __init__(self, config: EncoderConfig, layer: int, layouts: LayoutRegistry):
        super().__init__()
        self.layer = layer
        self.num_heads = config.num_heads
        self.head_dim = config.head_dim
        self.block_size = config.attention.block_size
        self.backend = config.attention.backend
        self.num_prepended = config.num_prepended_tokens
        self.qkv = nn.Linear(config.hidden_size, 3 * config.hidden_size)
        self.out = nn.Linear(config.hidden_size, config.hidden_size)
        self.layouts = layouts
        self.rotary = RotaryEmbedding(config.head_dim) if config.position == "rope" else None

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None,
                rows: torch.Tensor | None = None) -> torch.Tensor:
        """``x [B, T, hidden]`` -> ``[B, T, hidden]``, or ``[B, R, hidden]`` for the query tokens
        ``rows [R]`` only (every token is still a key; see :meth:`BigBirdEncoder.forward`)."""
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).view(batch, seq, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        if self.rotary is not None:
            q, k = self.rotary(q, k)
        if rows is not None:
            context = self.attend(q[:, :, rows], k, v, attention_mask, rows)
            return self.out(context.transpose(1, 2).reshape(batch, rows.numel(), hidden))
        context = self.attend(q, k, v, attention_mask)  # [B, H, T, D]
        return self.out(context.transpose(1, 2).reshape(batch, seq, hidden))

    @torch.compiler.disable
    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None,
               rows: torch.Tensor | None = None) -> torch.Tensor:
        """The layer's layout and its attention, ``q [B, H, R, D]``, ``k, v [B, H, T, D]`` ->
        ``[B, H, R, D]`` (``R = T`` unless ``rows``). Always eager: in a compiled layer
        (:meth:`BigBirdEncoder.compile_layers`) it is the one graph break, so the Triton kernels and
        the layout lookup run as written while the parts around them are compiled."""
        num_blocks = -(-(k.shape[2] - self.num_prepended) // self.block_size)  # sequence blocks, without ETC's
        layout = self.layouts.get(self.layer, num_blocks, k.device)
        if rows is not None:
            return attend_query_rows(q, k, v, layout, rows, key_padding_mask=attention_mask)
        return block_sparse_attention(q, k, v, layout, key_padding_mask=attention_mask, backend=self.backend)


class LocalConvolution(nn.Module):
    """Depthwise convolution over neighbouring tokens, then GELU and a pointwise projection.

    Each channel sees the ``kernel`` tokens centred on each position, at fixed offsets: what a
    k-mer chain or a CNN reads, which attention must otherwise learn to route (as in ConvBERT,
    Hyena and Caduceus' short convolutions). Padding tokens are zeroed first, so they never leak
    into real positions.
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        size = config.hidden_size
        self.depthwise = nn.Conv1d(size, size, config.conv_kernel, padding=config.conv_kernel // 2, groups=size)
        self.pointwise = nn.Linear(size, size)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
        """``x [B, T, H]``, ``attention_mask [B, T]`` (True = real token; None: all) -> ``[B, T, H]``."""
        if attention_mask is not None:
            x = x * attention_mask.unsqueeze(-1).to(x.dtype)
        return self.pointwise(nn.functional.gelu(self.depthwise(x.transpose(1, 2)).transpose(1, 2)))


class FeedForward(nn.Module):
    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(config.hidden_size, config.intermediate_size),
            nn.GELU(),
            nn.Linear(config.intermediate_size, config.hidden_size),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderLayer(nn.Module):
    """Pre-LN residual block: [x + drop(conv(LN(x)))], x + drop(attn(LN(x))), then x + drop(mlp(LN(x))).

    The convolution branch exists only with ``config.conv_kernel`` > 0.
    """

    def __init__(self, config: EncoderConfig, layer: int, layouts: LayoutRegistry):
        super().__init__()
        self.conv_norm = self.conv = None
        if config.conv_kernel:
            self.conv_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.conv = LocalConvolution(config)
        self.attn_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.attn = BlockSparseSelfAttention(config, layer, layouts)
        self.mlp_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.mlp = FeedForward(config)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor | None,
                rows: torch.Tensor | None = None) -> torch.Tensor:
        """``x [B, T, hidden]`` -> the same, or the tokens ``rows [R]`` only: ``[B, R, hidden]``."""
        if self.conv is not None:
            x = x + self.dropout(self.conv(self.conv_norm(x), attention_mask))
        residual = x if rows is None else x[:, rows]
        x = residual + self.dropout(self.attn(self.attn_norm(x), attention_mask, rows))
        return x + self.dropout(self.mlp(self.mlp_norm(x)))


class BigBirdEncoder(nn.Module):
    """Embeddings (through the convolutional stem, with ``config.stem``) plus ``num_layers``
    block-sparse Transformer layers.

    The layouts each layer used are kept in ``self.layouts`` (a :class:`LayoutRegistry`) and are
    saved with the model's state_dict (``get_extra_state``), so a reloaded model attends over the
    same graph. ETC layouts prepend global blocks: the encoder fills them with learned global
    tokens and drops them from its output.
    """

    def __init__(self, config: EncoderConfig):
        super().__init__()
        self.config = config
        self.layouts = LayoutRegistry(config.attention, config.num_heads)
        self.token_embedding = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_id)
        self.stem = HybridStem(config) if config.stem is not None else None
        # RoPE (in every attention layer) or the paper's learned absolute positions, added here.
        self.position_embedding = None
        if config.position == "absolute":
            self.position_embedding = nn.Embedding(config.max_positions, config.hidden_size)
        self.embed_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.dropout)
        self.layers = nn.ModuleList(EncoderLayer(config, i, self.layouts) for i in range(config.num_layers))
        self.final_norm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.apply(self._init_weights)
        # Only ETC layouts prepend global tokens; other layouts get no (empty, never-used) parameter,
        # which DDP would reject as unused.
        self.global_tokens = None
        if config.num_prepended_tokens:
            self.global_tokens = nn.Parameter(torch.randn(config.num_prepended_tokens, config.hidden_size) * 0.02)

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, nn.Embedding) and module.padding_idx is not None:
            nn.init.zeros_(module.weight[module.padding_idx])

    @property
    def attribution_layer(self) -> nn.Module:
        """The module whose output is the last representation with one vector per input token
        before anything mixes positions, where attributions are taken
        (:mod:`bigbird_dna.attribution.gradients`): with a stem the token embedding (the stem's
        convolutions mix neighbouring bases), else the embedding norm (tokens plus positions)."""
        return self.token_embedding if self.stem is not None else self.embed_norm

    def attribution_vectors(self, input_ids: torch.Tensor, token_vectors: torch.Tensor | None = None) -> torch.Tensor:
        """``[B, T, hidden]``: :attr:`attribution_layer`'s output for ``input_ids [B, T]``, with
        ``token_vectors [B, T, hidden]`` in place of the token embedding's output when given."""
        x = self.token_embedding(input_ids) if token_vectors is None else token_vectors
        return x if self.stem is not None else self._positions_and_norm(x)

    def _positions_and_norm(self, x: torch.Tensor) -> torch.Tensor:
        """``x [B, T, hidden]`` plus absolute positions (``model.position=absolute``), layer-normalised."""
        if self.position_embedding is not None:
            x = x + self.position_embedding(torch.arange(x.shape[1], device=x.device))
        return self.embed_norm(x)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None,
                rows: torch.Tensor | None = None) -> torch.Tensor:
        """Encode ``input_ids [B, T]``; returns hidden states ``[B, T, hidden]``.

        ``attention_mask [B, T]``: True for real tokens; ``None``: every token is real (no padding),
        which skips the key-padding path (:func:`~bigbird_dna.tokenizer.specials.padding_mask_or_none`).

        ``rows``: int64 ``[R]`` token positions (0-based) whose final states are all the caller
        needs, e.g. ``[0]`` for a ``[CLS]`` classifier. The last layer then computes attention
        queries, feed-forward and norm for those tokens only and ``[B, R, hidden]`` comes back, equal
        to ``forward(...)[:, rows]`` up to rounding. ETC layouts (prepended global tokens) and a
        pooling stem (whose upsampling path reads every token) compute every token and slice.
        """
        x, _, skip, sliced = self._through_layers(input_ids, attention_mask, rows)
        if sliced:
            return self.final_norm(x)
        if self.stem is not None:
            x = self.stem.up(x, skip, attention_mask)  # [B, T, hidden] at every input token
        return self.final_norm(x if rows is None else x[:, rows])

    @property
    def upsamples(self) -> bool:
        """True with a pooling stem: :meth:`forward` and :meth:`token_states` then differ."""
        return self.stem is not None and self.stem.decoder is not None

    def token_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The last layer's states at the BigBird tokens, before any upsampling, final-normed.

        ``(states [B, S, hidden], mask [B, S] or None)``: with a pooling stem ``[CLS] g_1 .. g_G
        [SEP]`` per row, right-padded, ``S = 2 + ceil((T - 2) / pool)`` (the groups of
        :class:`~bigbird_dna.model.stem.HybridStem`), the upsampling path not run; without one
        :meth:`forward`'s states. ``mask`` is True on real tokens, ``None`` when ``attention_mask`` is.
        """
        x, token_mask, _, _ = self._through_layers(input_ids, attention_mask, None)
        return self.final_norm(x), token_mask

    def _through_layers(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None,
                        rows: torch.Tensor | None
                        ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None, bool]:
        """Embeddings, stem and layers: ``(states, their mask, the stem's skip, sliced)``:
        ``states``: ``[B, S, hidden]`` at the BigBird tokens, global tokens removed, not final-normed;
        ``[B, R, hidden]`` when ``sliced`` (the last layer ran ``rows`` only: no global tokens, no
        pooling stem). ``skip``: the stem's ``[B, T, channels]`` (``None`` without a stem).
        """
        seq = input_ids.shape[1]
        if seq > self.config.max_input_tokens:
            pooled = f" ({self.config.pool} input tokens per position)" if self.config.pool > 1 else ""
            raise InputError(f"sequence of {seq} tokens is longer than the model's {self.config.max_input_tokens} "
                             f"(model.max_positions={self.config.max_positions}{pooled}); shorten the window or "
                             "raise max_positions.")
        x = self.token_embedding(input_ids)
        skip = None
        if self.stem is not None:
            x, attention_mask, skip = self.stem.down(x, attention_mask, self._folded_tokens(input_ids))
        token_mask = attention_mask
        x = self.dropout(self._positions_and_norm(x))
        extra = 0 if self.global_tokens is None else self.global_tokens.shape[0]
        if extra:
            x = torch.cat([self.global_tokens.expand(x.shape[0], -1, -1), x], dim=1)
            if attention_mask is not None:
                attention_mask = torch.cat([attention_mask.new_ones(x.shape[0], extra), attention_mask], dim=1)
        recompute = self.config.checkpoint_layers and self.training and torch.is_grad_enabled()
        last_rows = rows if extra == 0 and self.config.pool == 1 else None
        for i, layer in enumerate(self.layers):
            only = last_rows if i == len(self.layers) - 1 else None
            if recompute:
                x = checkpoint(layer, x, attention_mask, only, use_reentrant=False)
            else:
                x = layer(x, attention_mask, only)
        return (x, token_mask, skip, True) if last_rows is not None else (x[:, extra:], token_mask, skip, False)

    def _folded_tokens(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
        """``(input_ids, token embedding weight)`` for the stem's folded motif convolution
        (:meth:`~bigbird_dna.model.stem.HybridStem.motif_scores`) in training when the vocabulary is
        narrower than the hidden size, else ``None``. Evaluation keeps convolving the embedding's
        output, which attributions replace through a hook on the token embedding."""
        weight = self.token_embedding.weight
        return (input_ids, weight) if self.training and weight.shape[0] < weight.shape[1] else None

    def compile_layers(self, **options) -> None:
        """``torch.compile`` each layer in place (``options``: ``torch.compile``'s, e.g. ``mode``).

        Everything but attention is compiled: norms, projections, RoPE, the convolution, the MLP,
        dropout and residual adds, which Inductor fuses into fewer, larger kernels. Attention stays
        eager (:meth:`BlockSparseSelfAttention.attend`). Parameter names and the state_dict do not
        change, so checkpoints and exports are the same with and without it. The first step of each
        new input shape pays the compile time.
        """
        for layer in self.layers:
            layer.compile(**options)

    def get_extra_state(self) -> dict:
        return {"layouts": self.layouts.state_dict()}

    def set_extra_state(self, state: dict) -> None:
        self.layouts.load_state_dict(state.get("layouts", {}))
