"""task.mlm_auxiliary: a masked-LM loss beside the labels while a backbone fine-tunes."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import load_export
from bigbird_dna.model.stem import MaskedBatchNorm
from bigbird_dna.tasks.promoter import PromoterTask

from .conftest import make_export

STEM = {"kernel": 5, "channels": 16, "blocks": 1, "pool": 1}


def tasks(tmp_path, tokenizer, **settings):
    """The same backbone fine-tuned with the auxiliary loss (``settings``) and without it."""
    backbone = make_export(tmp_path / "mlm_export", "mlm", tokenizer, stem=STEM)
    model = load_export(backbone).model_config
    common = {"backbone": str(backbone), "tokenizer_json": tokenizer.to_str(), "encoder_dropout": 0.0,
              "head": {"dropout": 0.0}}
    auxiliary, plain = PromoterTask(model, {}, mlm_auxiliary=settings, **common), PromoterTask(model, {}, **common)
    plain.load_state_dict(auxiliary.export_weights(auxiliary.state_dict()))  # the same new head in both
    return backbone, auxiliary, plain


def test_the_auxiliary_loss_starts_from_the_backbones_head_and_leaves_the_label_path_alone(tmp_path, tiny_tokenizer):
    backbone, auxiliary, plain = tasks(tmp_path, tiny_tokenizer, weight=0.5, rows=3)
    exported = load_export(backbone).state_dict
    head = auxiliary.mlm_auxiliary.head.state_dict()
    assert all(torch.equal(head[k], exported[f"head.{k}"]) for k in head), "the backbone's MLM head is taken over"
    assert auxiliary.hparams.mlm_auxiliary == {"weight": 0.5, "mask_prob": 0.15, "rows": 3}
    assert plain.mlm_auxiliary is None and plain.hparams.mlm_auxiliary["weight"] == 0.0

    torch.manual_seed(1)
    ids = torch.randint(5, tiny_tokenizer.vocab_size, (6, 120))
    ids[:, 0], ids[:, -1] = tiny_tokenizer.cls_id, tiny_tokenizer.sep_id
    batch = {"input_ids": ids, "attention_mask": None, "labels": torch.tensor([[1.0], [0.0]] * 3)}
    auxiliary.train(), plain.train()
    with_mlm, kind = auxiliary.training_loss(batch)
    without = plain.training_loss(batch)[0]
    mlm = auxiliary.mlm_auxiliary.last_loss
    assert kind == "labels" and mlm > 0.5 * 1.0, "half a cross-entropy of at least a nat, untrained"
    torch.testing.assert_close(with_mlm.detach(), without.detach() + mlm, rtol=1e-5, atol=1e-6)
    # the masked rows' pass leaves the running statistics that evaluation uses as the clean batch set them
    norms = [(a, b) for a, b in zip(auxiliary.modules(), plain.modules()) if isinstance(a, MaskedBatchNorm)]
    assert norms and all(torch.equal(a.running_mean, b.running_mean) and torch.equal(a.running_var, b.running_var)
                         for a, b in norms)
    with_mlm.backward()
    without.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in auxiliary.mlm_auxiliary.head.parameters())
    tuned, untouched = dict(auxiliary.named_parameters()), dict(plain.named_parameters())
    layers = [n for n in tuned if n.startswith("encoder.layers.")]
    assert any(not torch.allclose(tuned[n].grad, untouched[n].grad) for n in layers), "the MLM loss reaches the encoder"
    # training only: the export holds the classifier alone
    assert set(auxiliary.export_weights(auxiliary.state_dict())) == set(plain.export_weights(plain.state_dict()))


@pytest.mark.parametrize("settings, message", [
    ({"weight": -1}, "weight=-1 must be >= 0"),
    ({"weight": 1, "mask_prob": 0}, "mask_prob=0 must be a share"),
    ({"weight": 1, "rows": 0}, "rows=0 must be a row count"),
    ({"weight": 1, "ratio": 2}, "no setting ratio"),
])
def test_out_of_range_settings_are_refused_with_the_setting_named(tmp_path, tiny_tokenizer, settings, message):
    with pytest.raises(InputError, match=message):
        tasks(tmp_path, tiny_tokenizer, **settings)


def test_it_does_not_go_with_the_shuffle_contrast(tmp_path, tiny_tokenizer):
    backbone = make_export(tmp_path / "mlm_export", "mlm", tiny_tokenizer)
    with pytest.raises(InputError, match="shuffle_contrast_steps do not go together"):
        PromoterTask(load_export(backbone).model_config, {}, backbone=str(backbone),
                     tokenizer_json=tiny_tokenizer.to_str(), mlm_auxiliary={"weight": 1}, shuffle_contrast_steps=5)


def test_the_loss_is_the_mean_cross_entropy_of_the_masked_tokens_and_zero_when_none_are(tmp_path, tiny_tokenizer):
    from bigbird_dna.data.mlm.masking import IGNORE_INDEX, mask_tokens

    _, auxiliary, _ = tasks(tmp_path, tiny_tokenizer, weight=0.5, rows=4)
    aux = auxiliary.mlm_auxiliary
    auxiliary.train()
    torch.manual_seed(2)
    ids = torch.randint(5, tiny_tokenizer.vocab_size, (4, 90))
    ids[:, 0], ids[:, -1] = tiny_tokenizer.cls_id, tiny_tokenizer.sep_id
    torch.manual_seed(3)
    loss = aux(auxiliary.encoder, ids, None)
    # the same draws by hand: the masked positions alone, scored and averaged
    torch.manual_seed(3)
    masked, labels = mask_tokens(ids, aux.unmaskable_ids, aux.mask_id, aux.vocab_size, aux.mask_prob)
    with torch.no_grad():
        hidden = auxiliary.encoder(masked, None)
    selected = labels != IGNORE_INDEX
    assert 10 < int(selected.sum()) < 4 * 88
    expected = 0.5 * torch.nn.functional.cross_entropy(aux.head(hidden[selected]).float(), labels[selected])
    torch.testing.assert_close(loss.detach(), expected, rtol=1e-5, atol=1e-6)

    specials = torch.full((2, 20), tiny_tokenizer.sep_id)  # nothing maskable: nothing selected
    empty = aux(auxiliary.encoder, specials, None)
    assert torch.isfinite(empty) and float(empty) == 0.0
    empty.backward()
    assert all(p.grad is not None for p in aux.head.parameters()), "every head parameter takes part, as DDP requires"
