"""``task.head.read=tokens``: a classifier pools the BigBird layers' states, one per ``pool`` bases,
instead of the upsampled per-base output; the upsampling path then does not run."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.errors import InputError
from bigbird_dna.model.encoder import BigBirdEncoder
from bigbird_dna.model.networks import SequenceClassifier
from bigbird_dna.model.outputs import SIGMOID, ModelOutput
from tests.model.test_hybrid_stem import hybrid_config, rows

TOKENS = {"pooling": "mean_max", "read": "tokens", "dropout": 0.0}


def classifier(head: dict, pool: int = 4, dropout: float = 0.0) -> SequenceClassifier:
    torch.manual_seed(0)
    return SequenceClassifier(hybrid_config(pool=pool, dropout=dropout), ModelOutput(SIGMOID, ("a", "b")), head=head)


def test_token_states_are_cls_then_one_state_per_group_of_pool_bases_then_sep():
    encoder = BigBirdEncoder(hybrid_config(pool=4)).eval()
    ids, mask = rows([61, 30, 17], width=61)
    states, token_mask = encoder.token_states(ids, mask)
    assert states.shape == (3, 2 + 15, 32)  # ceil(59 / 4) = 15 groups
    assert token_mask.sum(1).tolist() == [2 + 15, 2 + 7, 2 + 4]  # ceil(28 / 4), ceil(15 / 4)
    alone, alone_mask = encoder.token_states(ids[1:2, :30], None)
    assert alone_mask is None and alone.shape == (1, 9, 32)
    torch.testing.assert_close(states[1, :9], alone[0], atol=1e-5, rtol=0)


def test_without_a_pooling_stem_token_states_are_the_forward_pass():
    encoder = BigBirdEncoder(hybrid_config(pool=1)).eval()
    ids, mask = rows([80, 52], width=80)
    states, token_mask = encoder.token_states(ids, mask)
    assert torch.equal(token_mask, mask) and not encoder.upsamples
    torch.testing.assert_close(states, encoder(ids, mask), atol=0, rtol=0)


def test_reading_tokens_skips_the_upsampling_path_and_reading_bases_does_not():
    ids, mask = rows([101, 45], width=101)
    for read, changes in (("tokens", False), ("bases", True)):
        net = classifier({**TOKENS, "read": read}).eval()
        before = net(ids, mask)
        with torch.no_grad():
            net.encoder.stem.decoder["to_output"].weight.normal_()  # a constant shift would be normed away
        assert (not torch.allclose(before, net(ids, mask))) is changes, read


@pytest.mark.parametrize("pooling", ["cls", "mean_max"])
def test_logits_read_from_tokens_do_not_depend_on_batch_mates(pooling):
    net = classifier({**TOKENS, "pooling": pooling}).eval()
    ids, mask = rows([45, 101, 70], width=101, seed=1)
    mates, mates_mask = rows([45, 30, 101, 64], width=101, seed=2)
    mates[0] = ids[0]
    torch.testing.assert_close(net(mates, mates_mask)[0], net(ids, mask)[0], atol=1e-6, rtol=0)


def test_every_parameter_is_in_the_graph_and_only_the_unused_upsampling_path_gets_zeros():
    """DDP refuses parameters without a gradient: the upsampling path's get exact zeros, every
    other parameter a real gradient."""
    net = classifier(TOKENS, dropout=0.1).train()
    ids, mask = rows([154, 100], width=154)
    net(ids, mask).sum().backward()
    assert [name for name, p in net.named_parameters() if p.grad is None] == []
    zero = sorted(name for name, p in net.named_parameters() if not p.grad.abs().sum() > 0)
    assert zero == sorted(f"encoder.stem.decoder.{name}" for name, _ in net.encoder.stem.decoder.named_parameters())


def test_an_unknown_read_is_refused():
    with pytest.raises(InputError, match="task.head.read='kmers'"):
        classifier({"read": "kmers"})


def test_an_export_reading_tokens_predicts_as_the_training_module(tmp_path):
    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from bigbird_dna.tokenizer.fixed import char_tokenizer
    from bigbird_dna.tokenizer.specials import encode_with_specials
    from tests.model.test_hybrid_exports import MODEL, WINDOW, windows

    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    module = SequenceClassificationTask({**MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id},
                                        {}, num_labels=2, head=TOKENS, tokenizer_sha256=tokenizer.sha256).eval()
    seqs = windows(3, WINDOW) + windows(2, 61)
    ids, mask, _ = encode_with_specials(tokenizer, seqs, module.config.max_input_tokens)
    with torch.no_grad():
        want = module.probabilities(module(ids, mask))
    path = write_hf_export(tmp_path / "promoter", "promoter", module.state_dict(), module.config.to_dict(), tokenizer,
                           module.output, task_config={"name": "promoter", "head": TOKENS})
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    assert model.module.head.read == "tokens"
    torch.testing.assert_close(model.predict(seqs, strands="+"), want, atol=1e-5, rtol=0)
