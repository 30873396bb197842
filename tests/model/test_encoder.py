import pytest
import torch

from bigbird_dna.attention import PRESETS
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder

PARAMS = {
    "bigbird_itc": {"window": 3, "num_random": 3, "global_per_end": 1},
    "bigbird_etc": {"num_global": 2, "window": 3},
    "longformer": {"window": 3, "num_global": 1},
    "window_only": {"window": 3},
    "random_only": {"num_random": 3},
    "window_random": {"window": 3, "num_random": 3},
    "dense": {},
}


def _encoder(preset="bigbird_itc", block=16, **overrides):
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_positions=1024, dropout=0.0,
                           attention={"preset": preset, "params": PARAMS[preset], "block_size": block,
                                      "backend": "torch", **overrides})
    return BigBirdEncoder(config).eval()


def _batch(batch=2, seq=300, pad_from=220):
    ids = torch.randint(5, 40, (batch, seq), generator=torch.Generator().manual_seed(1))
    mask = torch.ones(batch, seq, dtype=torch.bool)
    mask[-1, pad_from:] = False
    ids[~mask] = 0
    return ids, mask


def test_every_layout_preset_is_selectable_from_the_config():
    assert set(PARAMS) == set(PRESETS)
    for preset in PRESETS:
        encoder = _encoder(preset)
        ids, mask = _batch()
        out = encoder(ids, mask)
        assert out.shape == (2, 300, 32)
        out.sum().backward()
        assert all(p.grad is not None for p in encoder.layers[0].attn.qkv.parameters())


def test_etc_prepends_learned_global_tokens_and_strips_them():
    encoder = _encoder("bigbird_etc")
    assert encoder.global_tokens.shape == (2 * 16, 32)
    ids, mask = _batch()
    encoder(ids, mask)
    layout = encoder.layouts.get(0, 19, torch.device("cpu"))  # 19 sequence blocks + 2 global
    assert layout.num_q_blocks == 21


def test_short_input_uses_dense_attention_for_that_call_only():
    encoder = _encoder()
    short_ids, short_mask = _batch(seq=64, pad_from=64)  # 4 blocks: too short for ITC
    encoder(short_ids, short_mask)
    dense = encoder.layouts.get(0, 4, torch.device("cpu"))
    assert dense.nnz == 2 * 4 * 4
    long_ids, long_mask = _batch(seq=512, pad_from=512)  # 32 blocks: sparse again
    encoder(long_ids, long_mask)
    sparse = encoder.layouts.get(0, 32, torch.device("cpu"))
    assert sparse.nnz < 2 * 32 * 32 / 2


def test_layouts_travel_with_the_state_dict():
    trained = _encoder()
    ids, mask = _batch()
    reference = trained(ids, mask)
    state = trained.state_dict()
    # A model built with another seed would draw other random blocks, unless it loads the saved ones.
    fresh = _encoder(seed=123)
    fresh.load_state_dict(state)
    assert torch.allclose(fresh(ids, mask), reference, atol=1e-6)
    other = _encoder(seed=123)
    other.load_state_dict({k: v for k, v in state.items() if k != "_extra_state"}, strict=False)
    assert not torch.allclose(other(ids, mask), reference, atol=1e-4)


def test_padding_does_not_change_real_token_outputs_of_the_same_length():
    encoder = _encoder()
    ids, mask = _batch(batch=1, seq=300, pad_from=300)
    alone = encoder(ids, mask)
    padded_ids = torch.cat([ids, ids], 0)
    padded_mask = torch.cat([mask, mask], 0)
    padded_mask[1, 250:] = False
    together = encoder(padded_ids, padded_mask)
    assert torch.allclose(together[0], alone[0], atol=1e-5)


@pytest.mark.parametrize("preset", ["bigbird_itc", "bigbird_etc"])
def test_sequences_longer_than_max_positions_are_refused(preset):
    encoder = _encoder(preset)
    with pytest.raises(Exception, match="max_positions"):
        encoder(torch.ones(1, 2048, dtype=torch.long))


def test_rope_scores_depend_on_offsets_only_and_absolute_keeps_its_table():
    from bigbird_dna.model.rotary import RotaryEmbedding

    rope = RotaryEmbedding(8)
    q, k = torch.randn(1, 1, 1, 8).expand(1, 1, 40, 8), torch.randn(1, 1, 1, 8).expand(1, 1, 40, 8)
    rq, rk = rope(q, k)
    scores = rq[0, 0] @ rk[0, 0].T  # [40, 40]: same vectors everywhere, so only offsets matter
    assert torch.allclose(scores.diagonal(3)[:-1], scores.diagonal(3)[1:], atol=1e-5)
    assert not torch.allclose(scores.diagonal(0)[:37], scores.diagonal(3), atol=1e-3)
    assert _encoder().position_embedding is None  # rope is the default: no learned table
    assert _encoder().layers[0].attn.rotary is not None


def test_a_config_saved_before_position_existed_loads_as_absolute_and_runs():
    old = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64,
                        max_positions=512, position="absolute").to_dict()
    del old["position"]
    config = EncoderConfig.from_dict(old)
    assert config.position == "absolute"
    encoder = BigBirdEncoder(config).eval()
    assert encoder.layers[0].attn.rotary is None
    state = encoder.state_dict()
    assert "position_embedding.weight" in state
    reloaded = BigBirdEncoder(EncoderConfig.from_dict(old)).eval()
    reloaded.load_state_dict(state)
    ids, mask = _batch(seq=100, pad_from=100)
    assert torch.equal(encoder(ids, mask), reloaded(ids, mask))


@pytest.mark.parametrize("preset", ["bigbird_itc", "bigbird_etc", "window_random"])
@pytest.mark.parametrize("position, conv", [("rope", 9), ("absolute", 0)])
@pytest.mark.parametrize("seq", [300, 1000])  # 19 blocks (dense path) and 63 (gathered path)
def test_rows_computes_only_those_tokens_of_the_last_layer_and_matches_the_full_pass(preset, position, conv, seq):
    """``rows`` ([CLS] classifiers read position 0) against every token's states sliced: the same up
    to rounding, with a padded sequence, rows in several blocks and a padding row (output 0-based)."""
    torch.manual_seed(0)
    config = EncoderConfig(vocab_size=40, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                           max_positions=1024, dropout=0.0, position=position, conv_kernel=conv,
                           attention={"preset": preset, "params": PARAMS[preset], "block_size": 16, "backend": "torch"})
    encoder = BigBirdEncoder(config).eval()
    ids, mask = _batch(seq=seq, pad_from=seq - 80)
    rows = torch.tensor([0, 17, seq // 2, seq - 1])  # the last one is padding in the second sequence
    with torch.no_grad():
        full = encoder(ids, mask)
        some = encoder(ids, mask, rows=rows)
    assert some.shape == (2, 4, 32)
    torch.testing.assert_close(some, full[:, rows], atol=2e-5, rtol=1e-4)
    assert not torch.allclose(some[:, 0], full[:, 1], atol=1e-3), "row 0 is not any other row"
