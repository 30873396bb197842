"""One rule for what a sequence may hold, in the Python API as in predict's FASTA reader: A, C, G,
T, N and the IUPAC codes, any case; anything else (and an empty string) is an InputError naming the
sequence's index and the character, never a silent [UNK]."""

from __future__ import annotations

import pytest

from bigbird_dna import BigBirdDNA
from bigbird_dna.errors import InputError
from tests.conftest import REPO

LEGACY = REPO / "tests" / "files" / "legacy_exports"


@pytest.fixture(scope="module")
def models():
    return {task: BigBirdDNA.from_pretrained(LEGACY / task, device="cpu") for task in ("mlm", "promoter")}


@pytest.mark.parametrize("bad, shown", [("ACGU", "'U'"), ("ACGT XYZ", "' '"), ("ACG-T", "'-'"), ("ACGT*", "'*'"),
                                        ("ACGT\r", "'\\r'"), ("ÄCGT", "'Ä'"), ("", "the sequence is empty")])
def test_embed_predict_and_score_refuse_what_is_not_a_nucleotide_code(models, bad, shown):
    seqs = ["ACGTACGTAC", bad]
    calls = [lambda: models["mlm"].embed(seqs), lambda: models["mlm"].score(seqs),
             lambda: models["promoter"].predict(seqs)]
    for call in calls:
        with pytest.raises(InputError, match="sequence 1") as refused:
            call()
        assert shown in str(refused.value), str(refused.value)


def test_iupac_codes_and_lower_case_are_accepted(models):
    assert models["promoter"].predict(["acgtRYSWKMBDHVN" * 4]).shape == (1,)


def test_the_repr_says_what_the_model_is(models):
    text = repr(models["promoter"])
    assert text.startswith("BigBirdDNA(task='promoter', output=sigmoid[promoter], layers=1, hidden=32")
    assert "max_tokens=256" in text and "device=cpu" in text
