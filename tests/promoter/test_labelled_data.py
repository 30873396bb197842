"""Labelled sequences from TSV/CSV and FASTA-per-class files, the shared collator, and sequences
shorter than one attention block."""

from __future__ import annotations

import gzip

import pytest
import torch

from bigbird_dna.data.labelled import LabelledSequenceCollator, LabelledSequences
from bigbird_dna.data.promoter.files import read_labelled
from bigbird_dna.errors import InputError
from bigbird_dna.tasks.promoter import PromoterTask
from tests.promoter.conftest import TINY_MODEL, write_fasta


def test_tsv_and_csv_tables_give_sequences_and_float_labels(tmp_path):
    (tmp_path / "a.tsv").write_text("id\tsequence\tlabel\nx\tACGTN\t1\ny\tacgtacgt\t0\n")
    with gzip.open(tmp_path / "b.csv.gz", "wt") as handle:
        handle.write("seq,y\nACGT,0\nTTTT,1\n")
    tsv = read_labelled(tmp_path / "a.tsv")
    csv = read_labelled(tmp_path / "b.csv.gz", sequence_column="seq", label_column="y")
    assert tsv.seqs == ["ACGTN", "acgtacgt"] and tsv.labels.tolist() == [[1.0], [0.0]]
    assert csv.seqs == ["ACGT", "TTTT"] and csv.labels.tolist() == [[0.0], [1.0]]


def test_one_fasta_per_class_plain_or_gzip(tmp_path):
    pos = write_fasta(tmp_path / "pos.fa", {"p1": "ACGTACGT", "p2": "GGGG"})
    neg = write_fasta(tmp_path / "neg.fa.gz", {"n1": "TTTTTTTTTT"})
    data = read_labelled({1: str(pos), 0: str(neg)})
    assert data.seqs == ["ACGTACGT", "GGGG", "TTTTTTTTTT"]
    assert data.labels[:, 0].tolist() == [1.0, 1.0, 0.0]


@pytest.mark.parametrize("text, needle", [
    ("sequence\tlabel\nACGT\t2\n", "not 0 or 1"),
    ("sequence\tlabel\n\t1\n", "empty"),
    ("sequence\tlabel\nHELLO\t1\n", "not nucleotide codes"),
    ("seq\tlabel\nACGT\t1\n", "data.sequence_column"),
])
def test_bad_tables_are_refused_with_file_and_line(tmp_path, text, needle):
    (tmp_path / "bad.tsv").write_text(text)
    with pytest.raises(InputError, match=needle):
        read_labelled(tmp_path / "bad.tsv")


def test_an_empty_fasta_record_is_refused(tmp_path):
    (tmp_path / "pos.fa").write_text(">p1\nACGT\n>p2\n>p3\nAC\n")
    with pytest.raises(InputError, match="record 'p2'.*empty"):
        read_labelled({1: str(tmp_path / "pos.fa")})


def test_collator_builds_cls_seq_sep_right_padded_and_truncated(tiny_tokenizer):
    items = LabelledSequences(["ACGTACGTAC", "A", "ACGT" * 500], [1, 0, 1])
    batch = LabelledSequenceCollator(tiny_tokenizer, max_tokens=64)([items[i] for i in range(3)])
    ids, mask = batch["input_ids"], batch["attention_mask"]
    assert ids.shape == (3, 64) and mask.dtype == torch.bool and batch["labels"].shape == (3, 1)
    for row, seq in zip(ids, ["ACGTACGTAC", "A"]):
        body = tiny_tokenizer.encode(seq)
        assert row[: len(body) + 2].tolist() == [tiny_tokenizer.cls_id, *body, tiny_tokenizer.sep_id]
        assert (row[len(body) + 2:] == 0).all()
    assert ids[2, -1] == tiny_tokenizer.sep_id and mask[2].all()  # cut to 64 tokens, [SEP] kept
    assert mask.sum(1).tolist()[:2] == [len(tiny_tokenizer.encode("ACGTACGTAC")) + 2, 3]


def test_sequences_shorter_than_one_block_train_and_score(tiny_tokenizer):
    """A 3-token input (block size 16) takes the dense fallback; a long one in the same model stays sparse."""
    model = PromoterTask({**TINY_MODEL, "vocab_size": tiny_tokenizer.vocab_size}, {}, num_labels=1)
    collate = LabelledSequenceCollator(tiny_tokenizer, max_tokens=256)
    short = collate([("A", [1.0]), ("CG", [0.0])])
    assert short["input_ids"].shape[1] < TINY_MODEL["attention"]["block_size"]
    loss = model.loss(model(short["input_ids"], short["attention_mask"]), short["labels"])
    loss.backward()
    assert torch.isfinite(loss) and model.head.out.weight.grad is not None
    long = collate([("ACGT" * 300, [1.0])])
    assert torch.isfinite(model.predict_proba(long["input_ids"], long["attention_mask"])).all()
    assert torch.isfinite(model.predict_proba(short["input_ids"], short["attention_mask"])).all()


def test_both_strand_evaluation_averages_the_reverse_complement(tiny_tokenizer):
    """``eval_reverse_complement``: the collator adds each sequence's reverse complement, tokenized on its
    own, and the task's val/test probability is the mean of the two strands', as ``predict`` gives."""
    from bigbird_dna.genome.sequence import reverse_complement

    seqs = ["AACCGGTTTACG", "GGGAAT", "ACGTTTGCA" * 20]
    items = [(s, [float(i % 2)]) for i, s in enumerate(seqs)]
    batch = LabelledSequenceCollator(tiny_tokenizer, max_tokens=256, both_strands=True)(items)
    rc = LabelledSequenceCollator(tiny_tokenizer, max_tokens=256)([(reverse_complement(s), y) for s, y in items])
    assert torch.equal(batch["rc_input_ids"], rc["input_ids"])
    assert torch.equal(batch["rc_attention_mask"], rc["attention_mask"])
    assert not torch.equal(batch["rc_input_ids"], batch["input_ids"])

    torch.manual_seed(0)
    model = PromoterTask({**TINY_MODEL, "vocab_size": tiny_tokenizer.vocab_size}, {}, num_labels=1).eval()
    with torch.no_grad():
        model._evaluate("val", batch)
        forward = model.predict_proba(batch["input_ids"], batch["attention_mask"])
        reverse = model.predict_proba(rc["input_ids"], rc["attention_mask"])
    probs, labels = model._collected["val"][0]
    assert torch.allclose(probs, (forward + reverse) / 2, atol=1e-6)
    assert not torch.allclose(forward, reverse, atol=1e-4)  # the two strands differ, so the mean is a change
    assert torch.equal(labels, batch["labels"])
