"""``encode_with_specials``: [CLS] tokens [SEP], right-padded, cut at the model's context."""

import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.tokenizer.fixed import char_tokenizer, kmer_tokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials


def row_by_row(tokenizer, seqs, max_tokens):
    """The plain construction, one row at a time: what the vectorised one must equal."""
    rows = [[tokenizer.cls_id, *tokenizer.encode(s)[:max_tokens - 2], tokenizer.sep_id] for s in seqs]
    ids = torch.full((len(rows), max(map(len, rows), default=2)), tokenizer.pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
    return ids


@pytest.mark.parametrize("tokenizer", [char_tokenizer(), kmer_tokenizer(3)])
def test_rows_are_cls_tokens_sep_then_padding_and_long_ones_are_cut(tokenizer):
    seqs = ["ACGTNACGT", "", "ac", "ACGT" * 30, "GGGCCCAT"]
    ids, mask, truncated = encode_with_specials(tokenizer, seqs, 20)
    assert torch.equal(ids, row_by_row(tokenizer, seqs, 20)) and ids.dtype == torch.long
    assert torch.equal(mask, ids != tokenizer.pad_id) and mask.dtype == torch.bool
    assert truncated == [3] and ids.shape[1] == 20
    assert ids[1, :3].tolist() == [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id]


def test_an_empty_batch_and_a_context_without_room():
    ids, mask, truncated = encode_with_specials(char_tokenizer(), [], 10)
    assert ids.shape == (0, 2) and truncated == []
    with pytest.raises(InputError, match="no room"):
        encode_with_specials(char_tokenizer(), ["ACGT"], 2)


def test_the_lookup_table_path_gives_the_tokenizers_ids_for_every_character():
    """A char tokenizer is applied as a byte table; on mixed case, IUPAC, N, characters outside the
    alphabet (-> [UNK]), non-ASCII and a newline (which tokenizers drops) it must equal tokenizers."""
    from bigbird_dna.tokenizer.specials import per_character_ids

    tokenizer = char_tokenizer()
    assert per_character_ids(tokenizer) is not None and per_character_ids(kmer_tokenizer(3)) is None
    rng = __import__("random").Random(0)
    letters = "ACGTacgtNnRYSWKMBDHVX-*"
    seqs = ["".join(rng.choice(letters) for _ in range(rng.randrange(0, 60))) for _ in range(50)]
    for batch in (seqs, [*seqs, "ACGTé"], [*seqs, "AC\nGT"]):
        for max_tokens in (512, 25):
            ids, mask, truncated = encode_with_specials(tokenizer, batch, max_tokens)
            assert torch.equal(ids, row_by_row(tokenizer, batch, max_tokens)), (len(batch), max_tokens)
            assert truncated == [i for i, s in enumerate(batch) if len(tokenizer.encode(s)) > max_tokens - 2]
    assert per_character_ids(tokenizer)[ord("x")] == tokenizer.unk_id
