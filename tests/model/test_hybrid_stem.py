"""The hybrid encoder's convolutional stem (``model.stem``): its config, how rows are pooled into
BigBird tokens and back, padding, batch-mates, every attention preset and both backends."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from bigbird_dna.errors import InputError
from bigbird_dna.model.config import EncoderConfig
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.networks import SequenceClassifier
from bigbird_dna.model.outputs import SIGMOID, ModelOutput
from tests.attention.test_encoder_backends import triton_device
from tests.conftest import REPO

CLS, SEP, PAD = 2, 3, 0
PRESET_PARAMS = {path.stem: yaml.safe_load(path.read_text())["params"]
                 for path in sorted((REPO / "conf" / "attention").glob("*.yaml"))}
INPUT_TOKENS = 154  # [CLS] + 152 + [SEP]: 40 BigBird positions at pool 4 (10 blocks of 4: sparse), 154 at pool 1


def hybrid_config(pool: int = 4, preset: str = "bigbird_itc", backend: str = "torch", dropout: float = 0.0,
                  block_size: int = 4, input_tokens: int = INPUT_TOKENS, **stem) -> EncoderConfig:
    """A 2-layer, 32-wide encoder with a 16-channel stem of width 7 that reads ``input_tokens``."""
    return EncoderConfig(vocab_size=12, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64,
                         max_positions=2 + (input_tokens - 2) // pool, dropout=dropout, conv_kernel=3,
                         attention={"preset": preset, "block_size": block_size, "params": PRESET_PARAMS[preset],
                                    "backend": backend},
                         stem={"kernel": 7, "channels": 16, "blocks": 1, "pool": pool, **stem})


def rows(lengths: list[int], width: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``[CLS] body [SEP]`` rows of ``lengths`` tokens (specials included), right-padded to ``width``."""
    ids = torch.randint(5, 12, (len(lengths), width), generator=torch.Generator().manual_seed(seed))
    mask = torch.arange(width) < torch.tensor(lengths)[:, None]
    ids[:, 0] = CLS
    ids[torch.arange(len(lengths)), torch.tensor(lengths) - 1] = SEP
    return ids.masked_fill(~mask, PAD), mask


def test_the_config_reads_the_stem_and_counts_input_tokens_per_bigbird_token():
    config = hybrid_config(pool=4)
    assert config.max_input_tokens == (40 - 2) * 4 + 2
    assert EncoderConfig.input_tokens_of(config.to_dict()) == config.max_input_tokens
    plain = EncoderConfig(vocab_size=12, max_positions=512)
    assert plain.max_input_tokens == 512 and "stem" not in plain.to_dict()  # saved as before the stem
    assert EncoderConfig.from_dict(config.to_dict()) == config
    with pytest.raises(InputError, match="odd"):
        hybrid_config(kernel=8)
    with pytest.raises(InputError, match="unknown model.stem settings"):
        hybrid_config(width=3)
    with pytest.raises(InputError, match="pool=0"):
        EncoderConfig(vocab_size=12, stem={"pool": 0})


def test_the_model_yamls_reach_pool_times_more_bases():
    tiny = EncoderConfig.from_dict({**yaml.safe_load(Path("conf/model/hybrid_tiny.yaml").read_text()),
                                    "vocab_size": 20})
    base = EncoderConfig.from_dict({**yaml.safe_load(Path("conf/model/hybrid_base.yaml").read_text()),
                                    "vocab_size": 20})
    assert (tiny.max_input_tokens - 2, base.max_input_tokens - 2) == (510 * 4, 4094 * 4)


def test_rows_pool_into_cls_groups_sep_and_the_mask_keeps_groups_with_any_real_base():
    config = hybrid_config(pool=4)
    encoder = BigBirdEncoder(config).eval()
    ids, mask = rows([11, 6, 2], width=11)  # bodies of 9, 4 and 0 tokens
    embedded = encoder.token_embedding(ids)
    tokens, pooled_mask, skip = encoder.stem.down(embedded, mask)
    assert tokens.shape == (3, 2 + 3, 32) and skip.shape == (3, 11, 16)  # ceil(9 / 4) = 3 groups
    assert pooled_mask.tolist() == [[True] * 5, [True, True, True, False, False], [True, True, False, False, False]]
    for row, sep_at in enumerate([4, 2, 1]):  # [SEP] right after each row's last group
        torch.testing.assert_close(tokens[row, 0], embedded[row, 0])
        torch.testing.assert_close(tokens[row, sep_at], embedded[row, int(mask[row].sum()) - 1])
    assert skip[~mask].abs().max() == 0 and skip[:, 0].abs().max() == 0  # the stem reads the body only


def test_no_mask_means_every_token_is_real():
    encoder = BigBirdEncoder(hybrid_config(pool=4)).eval()
    ids, mask = rows([23, 23], width=23)
    torch.testing.assert_close(encoder(ids, None), encoder(ids, mask), atol=1e-6, rtol=0)


@pytest.mark.parametrize("pool", [1, 4])
@pytest.mark.parametrize("training", [False, True])
def test_padding_content_never_reaches_real_positions(pool, training):
    """Nor the stem's batch statistics in training (no dropout here, so both passes are comparable)."""
    encoder = BigBirdEncoder(hybrid_config(pool=pool)).train(training)
    ids, mask = rows([60, 31], width=60)
    other = ids.clone()
    other[1, 31:] = torch.randint(5, 12, (29,))  # pad positions now hold bases, still masked
    torch.testing.assert_close(encoder(other, mask)[mask], encoder(ids, mask)[mask], atol=0, rtol=0)


def test_the_stem_normalises_each_channel_with_batch_statistics_in_training_and_running_ones_after():
    encoder = BigBirdEncoder(hybrid_config(pool=4)).train()
    norm = encoder.stem.motif_norm
    ids, mask = rows([90, 41], width=90)
    encoder(ids, mask)
    assert not torch.equal(norm.running_mean, torch.zeros_like(norm.running_mean))
    encoder.eval()
    alone = encoder(ids[1:, :41], None)[0]
    torch.testing.assert_close(encoder(ids, mask)[1, :41], alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("pool", [1, 4])
def test_a_rows_states_do_not_depend_on_how_far_it_is_padded(pool):
    """Zeros past a row's end and padding read the same: a row alone equals it padded in a batch
    (the dense layout at this length, so the block graph is the same too)."""
    config = hybrid_config(pool=pool, preset="dense")
    encoder = BigBirdEncoder(config).eval()
    ids, mask = rows([61, 30, 17], width=61)
    batched = encoder(ids, mask)
    for row, length in enumerate([61, 30, 17]):
        alone = encoder(ids[row:row + 1, :length], None)[0]
        torch.testing.assert_close(batched[row, :length], alone, atol=1e-5, rtol=0)


@pytest.mark.parametrize("pooling", ["cls", "mean", "mean_max"])
def test_a_classifiers_logits_do_not_depend_on_its_batch_mates(pooling):
    """Row 0 (45 tokens) padded to 101 beside other rows of the same width: its logits stay."""
    torch.manual_seed(0)
    net = SequenceClassifier(hybrid_config(pool=4), ModelOutput(SIGMOID, ("a", "b")),
                             head={"pooling": pooling, "dropout": 0.0}).eval()
    ids, mask = rows([45, 101, 70], width=101, seed=1)
    mates, mates_mask = rows([45, 30, 101, 64], width=101, seed=2)
    mates[0] = ids[0]
    torch.testing.assert_close(net(mates, mates_mask)[0], net(ids, mask)[0], atol=1e-6, rtol=0)


@pytest.mark.parametrize("pool", [1, 4])
def test_rows_give_the_full_pass_sliced(pool):
    encoder = BigBirdEncoder(hybrid_config(pool=pool)).eval()
    ids, mask = rows([80, 52], width=80)
    wanted = torch.tensor([0, 5, 51])
    torch.testing.assert_close(encoder(ids, mask, rows=wanted), encoder(ids, mask)[:, wanted], atol=1e-5, rtol=0)


def test_a_row_longer_than_the_input_context_is_refused():
    encoder = BigBirdEncoder(hybrid_config(pool=4))
    ids, _ = rows([154], width=154)  # (40 - 2) * 4 + 2 = 154 tokens fit
    assert encoder(ids, None).shape == (1, 154, 32)
    ids, _ = rows([155], width=155)
    with pytest.raises(InputError, match="longer than the model's 154"):
        encoder(ids, None)


@pytest.mark.parametrize("preset", sorted(PRESET_PARAMS))
def test_every_attention_preset_trains_and_every_parameter_shapes_a_cls_classifier(preset):
    """All parameters get a gradient from a [CLS] classifier's loss (DDP refuses unused ones), the
    upsampling path included, with every preset (sparse at this length: 38 groups, 10 blocks)."""
    torch.manual_seed(0)
    net = SequenceClassifier(hybrid_config(pool=4, preset=preset, dropout=0.1), ModelOutput(SIGMOID, ("a",)),
                             head={"pooling": "cls"}).train()
    ids, mask = rows([154, 100], width=154)
    net(ids, mask).sum().backward()
    assert [name for name, p in net.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0] == []


def test_the_stem_compiles_into_one_graph_so_cuda_graphs_can_replay_it():
    """Nothing in the stem reads a tensor on the host (a data-dependent shape or ``.item()`` would
    break the graph): both directions compile with ``fullgraph=True``."""
    encoder = BigBirdEncoder(hybrid_config(pool=4)).eval()
    ids, mask = rows([90, 41], width=90)
    embedded = encoder.token_embedding(ids)
    down = torch.compile(encoder.stem.down, fullgraph=True, backend="eager")
    up = torch.compile(encoder.stem.up, fullgraph=True, backend="eager")
    tokens, pooled_mask, skip = down(embedded, mask)
    assert up(tokens, skip, mask).shape == (2, 90, 32)


def _hybrid_pass(backend: str, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Blocks of 16 (the kernels' smallest): 770 input tokens are 194 BigBird tokens, 13 blocks."""
    torch.manual_seed(0)
    config = hybrid_config(pool=4, backend=backend, dropout=0.1, block_size=16, input_tokens=770)
    encoder = BigBirdEncoder(config).to(device)
    ids, mask = rows([770, 500], width=770)
    torch.manual_seed(2)  # the same dropout masks in every run
    out = encoder(ids.to(device), mask.to(device))
    out.square().sum().backward()
    return (out.detach().cpu(), encoder.stem.motifs.weight.grad.cpu(),
            encoder.layers[0].attn.qkv.weight.grad.cpu())


def test_the_triton_backend_matches_the_torch_backend_forward_and_backward():
    pytest.importorskip("triton")
    want = _hybrid_pass("torch", triton_device())
    got = _hybrid_pass("triton", triton_device())
    torch.testing.assert_close(got[0], want[0], atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(got[1], want[1], atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(got[2], want[2], atol=1e-3, rtol=1e-3)


def test_the_folded_motif_convolution_of_training_equals_the_convolution_of_the_embeddings():
    """Training folds the token embedding into the motif detectors' weights; the scores and every
    gradient (the embedding's included) match convolving the embeddings, as evaluation does."""
    encoder = BigBirdEncoder(hybrid_config(pool=4)).train()
    ids, mask = rows([154, 90, 40], width=154)
    body = mask & (torch.arange(154) >= 1) & (torch.arange(154) < mask.sum(1, keepdim=True) - 1)
    assert encoder._folded_tokens(ids) is not None and encoder.eval()._folded_tokens(ids) is None
    stem, weight = encoder.stem, encoder.token_embedding.weight
    grads = []
    for tokens in (None, (ids, weight)):
        encoder.zero_grad()
        scores = stem.motif_scores(encoder.token_embedding(ids), body, tokens)
        (scores * torch.linspace(-1, 1, scores.numel()).view_as(scores)).sum().backward()
        grads.append((scores.detach(), weight.grad.clone(), stem.motifs.weight.grad.clone(),
                      stem.motifs.bias.grad.clone()))
    for plain, folded in zip(*grads):
        torch.testing.assert_close(folded, plain, rtol=1e-4, atol=1e-5)
    assert grads[0][0][~body].abs().max() > 0  # the bias is added everywhere, in both
