"""``task.head.composition=K``: the classifier head's k-mer frequency path beside the pooled states."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.errors import InputError
from bigbird_dna.model.composition import KmerComposition, kmer_frequencies, num_composition_features
from bigbird_dna.tokenizer.fixed import char_tokenizer, kmer_tokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.model.test_head_reads_tokens import TOKENS, classifier
from tests.model.test_hybrid_stem import rows

COMPOSITION = {**TOKENS, "read": "bases", "composition": 3}


def ids_of(*seqs: str) -> tuple[torch.Tensor, torch.Tensor]:
    tokenizer = char_tokenizer()
    ids, mask, _ = encode_with_specials(tokenizer, list(seqs), 512)
    return ids, mask


def test_frequencies_count_kmers_of_bases_only_and_n_and_specials_break_them():
    ids, _ = ids_of("ACGTNAC", "GG")  # [CLS] A C G T N A C [SEP] / [CLS] G G [SEP] + padding
    freq = kmer_frequencies(ids, 2)
    assert freq.shape == (2, num_composition_features(2)) == (2, 20)
    # k = 1: A 2, C 2, G 1, T 1 of 6 bases; the N, [CLS], [SEP] and padding are not counted
    torch.testing.assert_close(freq[0, :4], torch.tensor([2, 2, 1, 1]) / 6)
    # k = 2 (A=0, C=1, G=2, T=3, first base most significant): AC twice, CG, GT; nothing spans the N
    pairs = torch.zeros(16)
    pairs[[1, 6, 11]] = torch.tensor([2.0, 1.0, 1.0]) / 4
    torch.testing.assert_close(freq[0, 4:], pairs)
    torch.testing.assert_close(freq[1], torch.cat([torch.tensor([0, 0, 1.0, 0]), torch.eye(16)[10]]))


def test_a_sequence_without_a_kmer_gets_zeros_not_nan():
    ids, _ = ids_of("NNN", "A")
    freq = kmer_frequencies(ids, 3)
    assert torch.isfinite(freq).all() and freq[0].sum() == 0 and freq[1, :4].tolist() == [1, 0, 0, 0]


def test_an_untrained_path_adds_nothing_and_the_rest_of_the_head_is_unchanged():
    ids, mask = ids_of("ACGTTGCA" * 12, "GGGCCC" * 5)
    torch.manual_seed(0)
    plain = classifier(TOKENS | {"read": "bases"}).eval()
    torch.manual_seed(0)
    wide = classifier(COMPOSITION).eval()
    wide.load_state_dict(plain.state_dict(), strict=False)
    torch.testing.assert_close(wide(ids, mask), plain(ids, mask), atol=0, rtol=0)


def test_the_path_alone_learns_gc_content_that_a_pooled_state_must_otherwise_build():
    """Sequences labelled by GC content: the composition path separates them after a few steps."""
    generator = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 2, (256,), generator=generator)
    gc_share = 0.35 + 0.3 * labels.float()  # [N]
    gc = torch.rand(256, 60, generator=generator) < gc_share[:, None]
    pick = torch.randint(0, 2, (256, 60), generator=generator)
    seqs = ["".join("GC"[p] if g else "AT"[p] for g, p in zip(row, picks)) for row, picks in zip(gc, pick)]
    ids, _ = ids_of(*seqs)
    path = KmerComposition(2, 1)
    optimizer = torch.optim.Adam(path.parameters(), lr=0.05)
    for _ in range(30):
        loss = torch.nn.functional.binary_cross_entropy_with_logits(path(ids).squeeze(1), labels.float())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    path.eval()
    scores = path(ids).squeeze(1).detach()
    accuracy = ((scores > 0).long() == labels).float().mean().item()
    assert accuracy > 0.9, accuracy
    assert path.running_mean.abs().sum() > 0  # the standardiser learnt the training statistics


def test_a_training_batch_of_one_sequence_uses_the_running_statistics():
    path = KmerComposition(2, 1).train()
    ids, _ = ids_of("ACGTAC")
    assert torch.isfinite(path(ids)).all()


def test_every_parameter_has_a_gradient():
    net = classifier(COMPOSITION, dropout=0.1).train()
    ids, mask = rows([154, 100], width=154)
    net(ids, mask).sum().backward()
    assert [name for name, p in net.named_parameters() if p.grad is None] == []
    assert net.head.composition.linear.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("k", [0, 7])
def test_a_k_out_of_range_is_refused_and_zero_means_no_path(k):
    if k == 0:
        assert classifier({**COMPOSITION, "composition": 0}).head.composition is None
        return
    with pytest.raises(InputError, match="task.head.composition=7"):
        classifier({**COMPOSITION, "composition": k})


def task_with(tokenizer, composition):
    from bigbird_dna.tasks.promoter import PromoterTask
    from tests.model.test_hybrid_exports import MODEL

    return PromoterTask({**MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id}, {},
                        head={**COMPOSITION, "composition": composition}, tokenizer_json=tokenizer.to_str())


def test_a_tokenizer_with_multi_base_tokens_is_refused_a_number_and_auto_turns_the_path_off():
    with pytest.raises(InputError, match="tokenizer=char"):
        task_with(kmer_tokenizer(3), 3)
    task = task_with(kmer_tokenizer(3), "auto")
    assert task.head.composition is None and task.export_config()["head"]["composition"] == 0


def test_auto_is_five_with_char_tokens_and_the_number_is_what_checkpoints_and_exports_record():
    task = task_with(char_tokenizer(), "auto")
    assert task.head.composition.max_k == 5
    assert task.hparams["head"]["composition"] == 5 and task.export_config()["head"]["composition"] == 5
    with pytest.raises(InputError, match="task.head.composition='many'"):
        task_with(char_tokenizer(), "many")


def test_an_export_with_a_composition_path_predicts_as_the_training_module_and_in_transformers(tmp_path):
    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from tests.model.test_hybrid_exports import MODEL, WINDOW, windows

    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    module = SequenceClassificationTask({**MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id},
                                        {}, num_labels=2, head=COMPOSITION, tokenizer_sha256=tokenizer.sha256,
                                        tokenizer_json=tokenizer.to_str())
    seqs = windows(3, WINDOW) + windows(2, 61)
    ids, mask, _ = encode_with_specials(tokenizer, seqs, module.config.max_input_tokens)
    module.train()
    module(ids, mask)  # one training pass: the standardiser's running statistics move off their start
    with torch.no_grad():
        module.head.composition.linear.weight.normal_()
    module.eval()
    with torch.no_grad():
        want = module.probabilities(module(ids, mask))
    path = write_hf_export(tmp_path / "promoter", "promoter", module.state_dict(), module.config.to_dict(), tokenizer,
                           module.output, task_config={"name": "promoter", "head": COMPOSITION})
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    assert model.module.head.composition.max_k == 3
    torch.testing.assert_close(model.module.head.composition.running_mean,
                               module.head.composition.running_mean, atol=0, rtol=0)
    torch.testing.assert_close(model.predict(seqs, strands="+"), want, atol=1e-5, rtol=0)
    transformers = pytest.importorskip("transformers")
    hf = transformers.AutoModelForSequenceClassification.from_pretrained(path, trust_remote_code=True).eval()
    with torch.no_grad():
        torch.testing.assert_close(hf(input_ids=ids, attention_mask=mask.long()).logits, module(ids, mask),
                                   atol=1e-5, rtol=0)
