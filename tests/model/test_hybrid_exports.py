"""Exports of the hybrid encoder (``model.stem``, pooling 4 bases per BigBird token) give the
training module's outputs through ``BigBirdDNA``, the CLIs and the ``transformers`` Auto classes,
and read windows of ``(max_positions - 2) * pool`` bases by default."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest
import torch

from bigbird_dna import BigBirdDNA
from bigbird_dna.tokenizer.fixed import char_tokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.promoter.conftest import lambda_seq

POOL = 4
MODEL = {"hidden_size": 32, "num_layers": 2, "num_heads": 2, "intermediate_size": 64, "max_positions": 40,
         "dropout": 0.0, "conv_kernel": 3, "attention": {"block_size": 4},
         "stem": {"kernel": 7, "channels": 16, "blocks": 1, "pool": POOL}}
WINDOW = (40 - 2) * POOL  # 152 bp: four times what 40 one-base tokens hold
HEAD = {"dropout": 0.0, "pooling": "mean_max"}


def _module(task: str):
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from bigbird_dna.tasks.mlm import MLMTask

    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    model = {**MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id}
    if task == "mlm":
        module = MLMTask(model, {}, tokenizer_sha256=tokenizer.sha256)
    else:
        module = SequenceClassificationTask(model, {}, num_labels=2, head=HEAD, tokenizer_sha256=tokenizer.sha256)
    module.eval()
    ids, _, _ = encode_with_specials(tokenizer, [lambda_seq()[:WINDOW]], module.config.max_input_tokens)
    module(ids, None)  # pins the layout of a full window
    return module


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict:
    """``{task: (training module, export folder)}`` for an MLM and a two-label classifier."""
    from bigbird_dna.hf import write_hf_export

    folder = tmp_path_factory.mktemp("hybrid_exports")
    found = {}
    for task in ("mlm", "promoter"):
        module = _module(task)
        task_config = {"name": task, **({} if task == "mlm" else {"head": HEAD})}
        path = write_hf_export(folder / task, task, module.state_dict(), module.config.to_dict(), char_tokenizer(),
                               module.output, task_config=task_config)
        found[task] = (module, path)
    return found


def windows(count: int, length: int) -> list[str]:
    seq = lambda_seq()
    return [seq[1000 + 311 * i:1000 + 311 * i + length] for i in range(count)]


def test_the_export_records_the_stem_and_the_tokenizer_context(exports):
    _, path = exports["mlm"]
    config = json.loads((path / "config.json").read_text())
    assert config["model"]["stem"] == MODEL["stem"]
    assert json.loads((path / "tokenizer_config.json").read_text())["model_max_length"] == WINDOW + 2
    model = BigBirdDNA.from_pretrained(path, device="cpu")
    assert model.config.stem.pool == POOL and f"max_tokens={WINDOW + 2}" in repr(model)


def test_predict_and_embed_equal_the_training_module(exports):
    module, path = exports["promoter"]
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    seqs = windows(3, WINDOW) + windows(2, 61)  # ragged: padded in one batch
    ids, mask, _ = encode_with_specials(model.tokenizer, seqs, WINDOW + 2)
    with torch.no_grad():
        want_probs = module.probabilities(module(ids, mask))
        want_hidden = module.encoder(ids, mask)
    torch.testing.assert_close(model.predict(seqs, strands="+", batch_size=8), want_probs, atol=1e-5, rtol=0)
    hidden, got_mask = model.embed(seqs, pool=None, batch_size=8)
    assert torch.equal(got_mask, mask)
    torch.testing.assert_close(hidden[mask], want_hidden[mask], atol=1e-5, rtol=0)


def test_score_gives_the_training_modules_masked_marginals_per_base(exports):
    module, path = exports["mlm"]
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    seq = windows(1, 90)[0]
    scores = model.score(seq, batch_size=32).per_base[0]
    ids, _, _ = encode_with_specials(model.tokenizer, [seq], WINDOW + 2)
    for base in (0, 1, 44, 89):
        masked = ids.clone()
        masked[0, base + 1] = model.tokenizer.mask_id
        with torch.no_grad():
            logp = module(masked, None)[0, base + 1].log_softmax(-1)[ids[0, base + 1]]
        assert scores[base].item() == pytest.approx(logp.item(), abs=1e-5)


def test_the_transformers_auto_classes_equal_bigbirddna(exports):
    transformers = pytest.importorskip("transformers")
    seqs = windows(2, WINDOW) + windows(1, 70)
    for task, auto in (("mlm", transformers.AutoModelForMaskedLM),
                       ("promoter", transformers.AutoModelForSequenceClassification)):
        module, path = exports[task]
        ours = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
        hf = auto.from_pretrained(path, trust_remote_code=True)
        ids, mask = ours.encode(seqs)
        with torch.no_grad():
            expected = module(ids, mask)
            torch.testing.assert_close(ours.module(ids, mask), expected, atol=1e-5, rtol=0)
            torch.testing.assert_close(hf(input_ids=ids, attention_mask=mask.long()).logits, expected,
                                       atol=1e-5, rtol=0)


def test_the_clis_read_windows_of_the_pooled_context_by_default(exports, tmp_path):
    from bigbird_dna.embed import main as embed
    from bigbird_dna.predict.cli import main as predict

    module, path = exports["promoter"]
    record = lambda_seq()[5000:5000 + 2 * WINDOW + 40]
    fasta = tmp_path / "one.fa"
    fasta.write_text(f">r\n{record}\n")
    predict(["--model", str(path), str(fasta), "--out-prefix", str(tmp_path / "scan"), "--device", "cpu"])
    rows = [line.split("\t") for line in (tmp_path / "scan.tsv").read_text().splitlines() if not line.startswith("#")]
    header, body = rows[0], rows[1:]
    starts = [int(row[header.index("start")]) for row in body]
    ends = [int(row[header.index("end")]) for row in body]
    assert {e - s for s, e in zip(starts, ends)} == {WINDOW} and starts[0] == 0 and ends[-1] == len(record)
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    first = model.predict([record[:WINDOW]])[0]
    got = [float(body[0][header.index(name)]) for name in model.output.names]
    np.testing.assert_allclose(got, first.numpy(), atol=1e-4)

    embed(["--model", str(path), str(fasta), "--out", str(tmp_path / "vectors.h5"), "--device", "cpu"])
    with h5py.File(tmp_path / "vectors.h5") as handle:
        assert (handle["end"][:] - handle["start"][:]).max() == WINDOW
