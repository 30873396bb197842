"""Encoder configuration as plain dataclasses.

Configs travel as plain Python types (``asdict``), so checkpoints load with ``weights_only=True`` and
exports store them as JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from bigbird_dna.errors import InputError


@dataclass
class AttentionConfig:
    """Which block graph each layer attends over, and which kernel computes it.

    Attributes:
        preset: a layout preset of :data:`bigbird_dna.attention.patterns.PRESETS` (``bigbird_itc``,
            ``bigbird_etc``, ``longformer``, ``window_only``, ``random_only``, ``window_random``,
            ``dense``).
        block_size: tokens per block (64 in the paper).
        params: the preset's own parameters, e.g. ``{window: 3, num_random: 3, global_per_end: 1}``.
        seed: base seed of the random blocks; each layer draws from (seed, layer, head, length).
        backend: ``auto`` (Triton on CUDA, PyTorch elsewhere), ``triton`` or ``torch``.
    """

    preset: str = "bigbird_itc"
    block_size: int = 64
    params: dict[str, Any] = field(default_factory=lambda: {"window": 3, "num_random": 3, "global_per_end": 1})
    seed: int = 0
    backend: str = "auto"


POSITIONS = ("rope", "absolute")
SPECIAL_TOKENS = 2  # [CLS] and [SEP] frame every row (bigbird_dna.tokenizer.specials)


@dataclass
class StemConfig:
    """A convolutional stem of motif detectors in front of the BigBird layers (``model.stem``); see
    :class:`~bigbird_dna.model.stem.HybridStem`.

    Attributes:
        kernel: width in input tokens (bases, with char tokens) of every stem convolution; odd, so a
            convolution is centred on each token. 15-19 bp is a CNN's first-layer motif width.
        channels: the stem's width (its convolutions mix all channels).
        blocks: residual convolution blocks after the first convolution.
        pool: input tokens per BigBird token: the stem max-pools groups of ``pool`` tokens, so the
            BigBird layers read ``pool`` times more bases, and an upsampling path (U-Net style, with
            a skip from the stem) gives the states back at every input token. 1: no downsampling.
    """

    kernel: int = 15
    channels: int = 128
    blocks: int = 1
    pool: int = 1

    def __post_init__(self) -> None:
        if self.kernel < 1 or self.kernel % 2 == 0:
            raise InputError(f"model.stem.kernel={self.kernel} must be an odd width, so each convolution is "
                             "centred on its token.")
        if self.channels < 1 or self.blocks < 0 or self.pool < 1:
            raise InputError(f"model.stem: channels={self.channels} and pool={self.pool} must be at least 1, "
                             f"blocks={self.blocks} at least 0.")


@dataclass
class EncoderConfig:
    """Shape of a BigBird encoder. ``base`` is the paper's 12 x 768 x 12 heads at 4096 tokens.

    ``checkpoint_layers``: recompute each layer in the backward pass instead of keeping its
    activations (training only), for long sequences (memory budget in ``benchmarks/README.md``).
    ``position``: ``"rope"`` (rotary, in every attention layer; the default) or ``"absolute"`` (the
    paper's learned position embeddings, added to the token embeddings). :meth:`from_dict` reads a
    dict without the key, i.e. a checkpoint or export made before the key existed, as ``absolute``.
    ``conv_kernel``: width of a depthwise convolution in every layer, before attention (0 = none,
    the paper's layer; configs without the key read as 0); see
    :class:`~bigbird_dna.model.encoder.LocalConvolution`.
    ``stem``: a :class:`StemConfig` (a convolutional stem, optionally pooling) or ``None`` (no stem:
    token embeddings feed the layers, as in every model saved before the key existed; such a config
    also saves without the key). ``max_positions`` counts the tokens the BigBird layers read;
    :attr:`max_input_tokens` the input tokens a row may have.
    """

    vocab_size: int
    hidden_size: int = 768
    num_layers: int = 12
    num_heads: int = 12
    intermediate_size: int = 3072
    max_positions: int = 4096
    dropout: float = 0.1
    layer_norm_eps: float = 1e-12
    pad_id: int = 0
    checkpoint_layers: bool = False
    position: str = "rope"
    conv_kernel: int = 0
    attention: AttentionConfig = field(default_factory=AttentionConfig)
    stem: StemConfig | None = None

    def __post_init__(self) -> None:
        if isinstance(self.attention, dict):
            self.attention = AttentionConfig(**self.attention)
        if isinstance(self.stem, dict):
            known = {f.name for f in fields(StemConfig)}
            if unknown := set(self.stem) - known:
                raise InputError(f"unknown model.stem settings {sorted(unknown)}; known: {sorted(known)}.")
            self.stem = StemConfig(**self.stem)
        if self.conv_kernel < 0 or (self.conv_kernel and self.conv_kernel % 2 == 0):
            raise InputError(f"model.conv_kernel={self.conv_kernel} must be 0 (off) or an odd width, "
                             "so the convolution is centred on each token.")
        if self.position not in POSITIONS:
            raise InputError(f"model.position={self.position!r} is not one of {POSITIONS}.")
        if self.hidden_size % self.num_heads:
            raise InputError(f"model.hidden_size={self.hidden_size} is not divisible by "
                             f"model.num_heads={self.num_heads}; pick sizes that divide.")

    @property
    def num_prepended_tokens(self) -> int:
        """Extra global tokens an ETC layout places before the sequence (0 for other presets)."""
        from bigbird_dna.attention import preset

        return preset(self.attention.preset, **self.attention.params).prepend * self.attention.block_size

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def pool(self) -> int:
        """Input tokens per BigBird token: the stem's ``pool``, 1 without a stem."""
        return 1 if self.stem is None else self.stem.pool

    @property
    def max_input_tokens(self) -> int:
        """The most input tokens a row may have, ``[CLS]`` and ``[SEP]`` included: ``max_positions``
        BigBird tokens, of which all but ``[CLS]`` and ``[SEP]`` hold ``pool`` input tokens each.
        Every tokenizer call of a model (training collators, ``predict``, ``BigBirdDNA``) uses it."""
        return input_tokens(self.max_positions, self.pool)

    def to_dict(self) -> dict[str, Any]:
        """Plain types; without ``stem`` when there is none, as every model before the stem saved."""
        values = asdict(self)
        if self.stem is None:
            del values["stem"]
        return values

    @staticmethod
    def input_tokens_of(values: dict[str, Any]) -> int:
        """:attr:`max_input_tokens` of a config dict, even a partial one (0 without ``max_positions``)."""
        max_positions = values.get("max_positions") or 0
        return input_tokens(max_positions, (values.get("stem") or {}).get("pool", 1)) if max_positions else 0

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> "EncoderConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise InputError(f"unknown model settings {sorted(unknown)}; known: {sorted(known)}.")
        # Models saved before ``position`` existed used learned absolute positions.
        return cls(**{"position": "absolute", **values})


def input_tokens(max_positions: int, pool: int) -> int:
    """Input tokens (``[CLS]`` and ``[SEP]`` included) that ``max_positions`` BigBird tokens read
    when each one but ``[CLS]`` and ``[SEP]`` pools ``pool`` of them: the one bases/tokens rule."""
    return (max_positions - SPECIAL_TOKENS) * pool + SPECIAL_TOKENS
