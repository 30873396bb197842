"""The exported tokenizer.json read by HF ``transformers`` gives the project's ids, lowercase and N
runs included, and pads; the project reads it back to the same ids and fingerprint."""

from __future__ import annotations

import pytest

from bigbird_dna.tokenizer import DNATokenizer, train_bpe_tokenizer
from bigbird_dna.tokenizer.hf import hf_side_files, hf_tokenizer_json, project_tokenizer
from tests.promoter.conftest import lambda_seq

transformers = pytest.importorskip("transformers")

SEQ = lambda_seq()
INPUTS = [SEQ[:300], SEQ[300:600].lower(), "ACGT" + "N" * 37 + "acgtnnnnTTGAC" + "n" * 5, "A", "ACGTXACGT"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    tokenizer = train_bpe_tokenizer([SEQ[i:i + 2000] for i in range(0, len(SEQ), 2000)], vocab_size=128,
                                    max_token_length=8)
    folder = tmp_path_factory.mktemp("hf")
    (folder / "tokenizer.json").write_text(hf_tokenizer_json(tokenizer))
    for name, text in hf_side_files(256).items():
        (folder / name).write_text(text)
    return tokenizer, folder


def test_transformers_gives_the_projects_ids_with_cls_and_sep(exported):
    tokenizer, folder = exported
    hf = transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    expected = [[tokenizer.cls_id, *ids, tokenizer.sep_id] for ids in tokenizer.encode_batch(INPUTS)]
    assert [hf(s)["input_ids"] for s in INPUTS] == expected
    assert any(len(set(row) & tokenizer.n_run_ids) for row in expected)  # N runs really are N-run tokens
    assert tokenizer.unk_id not in expected[1]  # lowercase is not [UNK]


def test_the_folder_declares_special_tokens_and_pads(exported):
    tokenizer, folder = exported
    hf = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert (hf.pad_token_id, hf.unk_token_id, hf.cls_token_id, hf.sep_token_id, hf.mask_token_id) == (
        tokenizer.pad_id, tokenizer.unk_id, tokenizer.cls_id, tokenizer.sep_id, tokenizer.mask_id)
    batch = hf(INPUTS, padding=True)
    width = max(len(ids) for ids in tokenizer.encode_batch(INPUTS)) + 2
    for row, mask, ids in zip(batch["input_ids"], batch["attention_mask"], tokenizer.encode_batch(INPUTS)):
        assert len(row) == width and row[:len(ids) + 2] == [tokenizer.cls_id, *ids, tokenizer.sep_id]
        assert set(row[len(ids) + 2:]) <= {tokenizer.pad_id} and sum(mask) == len(ids) + 2


def test_the_project_reads_the_hf_file_to_the_same_ids_and_fingerprint(exported):
    tokenizer, folder = exported
    text = (folder / "tokenizer.json").read_text()
    assert DNATokenizer.load(folder / "tokenizer.json").encode_batch(INPUTS) == tokenizer.encode_batch(INPUTS)
    assert project_tokenizer(text).sha256 == tokenizer.sha256
    assert hf_tokenizer_json(DNATokenizer.from_str(text)) == text  # wrapping twice changes nothing
