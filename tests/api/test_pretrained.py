"""``BigBirdDNA``: embed is the encoder's own forward pass, predict is ``python -m bigbird_dna.predict``,
and save_pretrained -> from_pretrained round-trips bit-exactly, on models trained in the session."""

from __future__ import annotations

import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.demo.synthetic_promoters import planted_sequences
from bigbird_dna.errors import InputError
from bigbird_dna.predict import main as predict_main
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.api.conftest import PROMOTER_BP
from tests.promoter.conftest import lambda_seq, write_fasta

SEQS = [lambda_seq()[i:i + n] for i, n in ((0, 450), (5000, 200), (9000, 500))] + ["acgtnnnnACGT"]


def test_embed_is_the_encoders_forward_pass_pooled(mlm_export):
    model = BigBirdDNA.from_pretrained(mlm_export, device="cpu")
    mean = model.embed(SEQS, pool="mean", batch_size=1)
    cls = model.embed(SEQS, pool="cls", batch_size=1)
    assert mean.shape == cls.shape == (len(SEQS), model.config.hidden_size) and mean.dtype == torch.float32
    for i, seq in enumerate(SEQS):
        ids, mask, _ = encode_with_specials(model.tokenizer, [seq], model.config.max_positions)
        with torch.no_grad():
            hidden = model.module.encoder(ids, mask)[0]  # [T, hidden]
        assert torch.equal(cls[i], hidden[0])
        torch.testing.assert_close(mean[i], hidden[1:-1].mean(0), rtol=0, atol=1e-6)


def test_embed_without_pooling_returns_every_position_and_the_mask(mlm_export):
    model = BigBirdDNA.from_pretrained(mlm_export, device="cpu")
    hidden, mask = model.embed(SEQS, pool=None, batch_size=4)
    ids, expected_mask, _ = encode_with_specials(model.tokenizer, SEQS, model.config.max_positions)
    assert torch.equal(mask, expected_mask) and hidden.shape == (*ids.shape, model.config.hidden_size)
    with torch.no_grad():
        expected = model.module.encoder(ids, expected_mask)
    torch.testing.assert_close(hidden[mask], expected[expected_mask], rtol=0, atol=1e-6)


def test_predict_gives_the_scores_of_the_predict_cli(promoter_export, tmp_path):
    seqs = planted_sequences(10, PROMOTER_BP, 200, seed=7)[0]
    fasta = write_fasta(tmp_path / "w.fa", {f"s{i}": s for i, s in enumerate(seqs)})
    predict_main(["--model", str(promoter_export), str(fasta), "--out-prefix", str(tmp_path / "cli"),
                  "--batch-size", "4", "--device", "cpu", "--no-progress"])
    lines = [line for line in (tmp_path / "cli.tsv").read_text().splitlines() if not line.startswith("#")]
    rows = [line.split("\t") for line in lines[1:]]  # after the settings line and the header
    model = BigBirdDNA.from_pretrained(promoter_export, device="cpu")
    probs = model.predict(seqs, batch_size=4)
    assert probs.shape == (len(seqs),)
    assert [r[0] for r in rows] == [f"s{i}" for i in range(len(seqs))]
    torch.testing.assert_close(probs, torch.tensor([float(r[4]) for r in rows]), rtol=0, atol=1e-6)
    forward, reverse = model.predict(seqs, strands="+"), model.predict(seqs, strands="-")
    torch.testing.assert_close(probs, (forward + reverse) / 2, rtol=0, atol=1e-6)


def test_save_pretrained_round_trips_bit_exactly_without_pickle(promoter_export, tmp_path):
    model = BigBirdDNA.from_pretrained(promoter_export, device="cpu")
    before = model.embed(SEQS, pool="cls", batch_size=2)  # also pins layouts of new lengths
    saved = model.save_pretrained(tmp_path / "saved")
    assert sorted(p.name for p in saved.iterdir()) == ["README.md", "config.json", "configuration_bigbird_dna.py",
                                                        "model.safetensors", "modeling_bigbird_dna.py",
                                                        "special_tokens_map.json", "tokenizer.json",
                                                        "tokenizer_config.json"]
    again = BigBirdDNA.from_pretrained(saved, device="cpu")
    state, state_again = model.module.state_dict(), again.module.state_dict()
    assert state.keys() == state_again.keys()
    tensors = [k for k, v in state.items() if torch.is_tensor(v)]
    assert all(torch.equal(state[k], state_again[k]) for k in tensors)
    layouts, layouts_again = model.module.encoder.layouts, again.module.encoder.layouts
    assert layouts._pinned.keys() == layouts_again._pinned.keys() and len(layouts._pinned) > 1
    assert all(layouts._pinned[k].equals(layouts_again._pinned[k]) for k in layouts._pinned)
    assert torch.equal(again.embed(SEQS, pool="cls", batch_size=2), before)
    assert again.tokenizer.sha256 == model.tokenizer.sha256 and again.task == "promoter"
    assert torch.equal(again.predict(SEQS[:2]), model.predict(SEQS[:2]))


def test_misuse_is_an_input_error(mlm_export):
    model = BigBirdDNA.from_pretrained(mlm_export, device="cpu")
    with pytest.raises(InputError, match="without a classification head"):
        model.predict(SEQS)
    with pytest.raises(InputError, match="pool="):
        model.embed(SEQS, pool="max")
    with pytest.raises(InputError, match=r"sequence 0 \(8000 bp\) needs .* more than the model's 256, which "
                                         r"hold about \d+ bp of it; cut it into windows of \d+ bp or less"):
        model.embed(["ACGT" * 2000])
    with pytest.raises(InputError, match="not a bigbird_dna export"):
        BigBirdDNA.from_pretrained(mlm_export.parent)
