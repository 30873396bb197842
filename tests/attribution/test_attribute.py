"""Attributions: ISM is the brute-force effect of each mutation through ``predict``; integrated
gradients are complete; a model that ignores its input gets zeros; token scores spread onto bases;
both strands, targets and bad input."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from bigbird_dna.attribution.bases import LETTERS, mirror
from bigbird_dna.attribution.gradients import block_outputs, from_block_output
from bigbird_dna.attribution.targets import resolve_target
from bigbird_dna.errors import InputError
from bigbird_dna.genome.sequence import reverse_complement


def brute_force_ism(model, seq: str, strands: str, target: int, span=None) -> np.ndarray:
    """``predict`` of every single-base mutant, one at a time, minus ``predict`` of ``seq``."""
    a, b = span or (0, len(seq))

    def prob(s):
        p = model.predict([s], strands=strands, batch_size=1)
        return float(p[0] if p.dim() == 1 else p[0, target])

    reference = prob(seq)
    out = np.full((len(seq), 4), np.nan)
    out[a:b] = 0.0
    for i in range(a, b):
        for c, letter in enumerate(LETTERS):
            if seq[i].upper() != letter:
                out[i, c] = prob(seq[:i] + letter + seq[i + 1:]) - reference
    return out


@pytest.mark.parametrize("name,strands,target,span", [("promoter", "+", None, None), ("promoter", "both", None, None),
                                                      ("labels", "both", "DNase", (10, 30)),
                                                      ("classes", "+", "promoter", (0, 20)),
                                                      ("hybrid", "+", None, (5, 25))])
def test_ism_equals_predict_of_every_mutant(models, seqs, name, strands, target, span):
    model = models[name]
    seq = seqs[3][:40] if name == "promoter" else seqs[0][:40]  # the first holds N and lower case
    got = model.attribute([seq], method="ism", target=target, output="probability", per_letter=True,
                          strands=strands, span=span, batch_size=7)[0].numpy()
    column = model.output.names.index(target) if target else 0
    expected = brute_force_ism(model, seq, strands, column, span)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got[~np.isnan(got)], expected[~np.isnan(expected)], atol=1e-5, rtol=0)
    assert np.abs(expected[~np.isnan(expected)]).max() > 1e-3  # the mutations do move the score
    per_base = model.attribute([seq], method="ism", target=target, output="probability", strands=strands,
                               span=span)[0].numpy()
    np.testing.assert_allclose(per_base, -expected.mean(axis=1), atol=1e-5, equal_nan=True)  # NaN outside the span


@pytest.mark.parametrize("name", ["promoter", "kmer", "hybrid"])
def test_integrated_gradients_are_complete_at_the_default_steps(models, seqs, name):
    model = models[name]
    attributions = model.attribute(seqs, method="integrated_gradients")  # [N, L], logit of the one output
    ids, _ = model.encode(seqs[:3])  # the three of one length: no padding
    with torch.no_grad():
        value = from_block_output(model.module, resolve_target(model.output, None))
        x, baseline = block_outputs(model.module, model.tokenizer, ids)
        gap = value(x) - value(baseline)
    sums = attributions[:3].nansum(1)
    assert gap.abs().min() > 0.05  # a real difference to explain
    np.testing.assert_allclose(sums.numpy(), gap.numpy(), rtol=0.01)


def test_gradient_x_input_is_the_block_gradient_times_the_difference_from_the_baseline(models, seqs):
    model = models["promoter"]
    got = model.attribute(seqs[:1], method="gradient_x_input")[0]
    ids, _ = model.encode(seqs[:1])
    norm = model.module.encoder.attribution_layer
    captured = {}

    def keep(module, inputs, output):
        output.retain_grad()
        captured["x"] = output

    handle = norm.register_forward_hook(keep)
    try:
        model.module.logits(ids, None)[:, 0].sum().backward()
    finally:
        handle.remove()
        model.module.zero_grad(set_to_none=True)
    _, baseline = block_outputs(model.module, model.tokenizer, ids)
    manual = ((captured["x"] - baseline) * captured["x"].grad).sum(-1)[0, 1:-1].detach()
    np.testing.assert_allclose(got.numpy(), manual.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("method", ["ism", "gradient_x_input", "integrated_gradients"])
def test_a_model_that_ignores_its_input_gets_zero_attributions(exports, seqs, method, tmp_path):
    from bigbird_dna.pretrained import BigBirdDNA

    model = BigBirdDNA.from_pretrained(exports["promoter"], device="cpu")
    with torch.no_grad():
        model.module.head.out.weight.zero_()  # the output is its bias, whatever the sequence
    got = model.attribute(seqs[:2], method=method, per_letter=True)
    assert torch.count_nonzero(got[~got.isnan()]) == 0


def test_per_letter_holds_the_per_base_score_in_the_observed_column(models, seqs):
    model = models["labels"]
    per_base = model.attribute(seqs[:2], method="integrated_gradients", target=1)
    letters = model.attribute(seqs[:2], method="integrated_gradients", target="DNase", per_letter=True)
    assert letters.shape == (2, len(seqs[0]), 4)
    observed = torch.tensor([[LETTERS.index(b) for b in s] for s in seqs[:2]])
    torch.testing.assert_close(letters.gather(2, observed[..., None])[..., 0], per_base)
    assert (letters != 0).sum(-1).float().mean() > 3  # the other letters' hypothetical values are filled in


def test_k_mer_tokens_share_their_score_equally_among_their_bases(models, seqs):
    per_base = models["kmer"].attribute(seqs[:1], method="gradient_x_input")[0]  # 60 bp: 20 3-mers
    tokens = per_base.view(20, 3)
    torch.testing.assert_close(tokens, tokens[:, :1].expand(20, 3))
    letters = models["kmer"].attribute(seqs[:1], method="gradient_x_input", per_letter=True)[0]
    assert ((letters != 0).sum(-1) <= 1).all()  # no per-letter alternative: the observed letter only


def test_both_strands_average_the_mirrored_reverse_complement(models, seqs):
    model = models["promoter"]
    forward = model.attribute(seqs[:2], method="gradient_x_input", per_letter=True)
    reverse = model.attribute([reverse_complement(s) for s in seqs[:2]], method="gradient_x_input", per_letter=True)
    both = model.attribute(seqs[:2], method="gradient_x_input", per_letter=True, strands="both")
    for i in range(2):
        torch.testing.assert_close(both[i], (forward[i] + mirror(reverse[i])) / 2)


def test_sequences_of_different_lengths_are_nan_padded(models, seqs):
    got = models["promoter"].attribute([seqs[0], seqs[1][:25]], method="gradient_x_input")
    assert got.shape == (2, 60) and got[1, 25:].isnan().all() and not got[1, :25].isnan().any()


@pytest.mark.parametrize("name,kwargs,expected", [
    ("labels", {}, "has 3 outputs; choose a target: CTCF, DNase, H3K4me3"),
    ("labels", {"target": "CTCFL"}, "target 'CTCFL' is not an output of this model; it has CTCF, DNase, H3K4me3"),
    ("classes", {"target": 3}, "0-based index below 3"),
    ("promoter", {"method": "deeplift"}, "method='deeplift': use one of ism, gradient_x_input"),
    ("promoter", {"output": "odds"}, "output='odds': use one of logit, probability"),
    ("promoter", {"method": "ism", "span": (50, 70)}, "span [50, 70) is not inside a sequence of 60 bp"),
    ("promoter", {"span": (0, 10)}, "span limits ISM only"),
])
def test_bad_requests_are_input_errors(models, seqs, name, kwargs, expected):
    with pytest.raises(InputError) as err:
        models[name].attribute(seqs[:1], **kwargs)
    assert expected in str(err.value)


def test_an_mlm_export_is_refused_with_a_pointer_to_score(tmp_path):
    from bigbird_dna.pretrained import BigBirdDNA
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.promoter.conftest import make_export

    mlm = BigBirdDNA.from_pretrained(make_export(tmp_path / "mlm", "mlm", char_tokenizer()), device="cpu")
    with pytest.raises(InputError, match="without a classification head.*python -m bigbird_dna.score"):
        mlm.attribute(["ACGT" * 10])


def test_gradient_methods_without_captum_name_the_extra(models, seqs, monkeypatch):
    monkeypatch.setitem(sys.modules, "captum", None)
    monkeypatch.setitem(sys.modules, "captum.attr", None)
    with pytest.raises(InputError, match=r"pip install 'bigbird_dna\[explain\]'"):
        models["promoter"].attribute(seqs[:1])
    for method in ("ism", "gradient_x_input"):  # need no extra
        assert models["promoter"].attribute(seqs[:1], method=method).shape == (1, 60)
