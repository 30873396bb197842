"""The MLM metrics score only [MASK] inputs, and the baselines are what broken models would score."""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from bigbird_dna.data.mlm.collator import MLMCollator
from bigbird_dna.data.mlm.masking import IGNORE_INDEX
from bigbird_dna.evaluation.kmer_chains import KmerModel, encode, select_and_fit
from bigbird_dna.genome.splits import Region
from bigbird_dna.genome.tiles import tile_regions
from bigbird_dna.tasks.mlm import MLMTask
from bigbird_dna.tokenizer import char_tokenizer, kmer_tokenizer

MODEL = dict(hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, max_positions=512, dropout=0.0,
             attention=dict(preset="dense", block_size=16, params={}, backend="torch"))
OPTIM = dict(lr=1e-3, weight_decay=0.0, betas=[0.9, 0.98], warmup_steps=0)


def _markov_seq(n: int, order: int = 2, seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    table = np.stack([rng.permutation([0.85, 0.1, 0.04, 0.01]) for _ in range(4 ** order)])
    out, ctx = [], 0
    for _ in range(n):
        base = rng.choice(4, p=table[ctx])
        out.append("ACGT"[base])
        ctx = (ctx * 4 + base) % 4 ** order
    return "".join(out)


class _Copy(nn.Module):
    """A 'model' that copies its input: logits = prior + 4 * one_hot(input) unless the input is [MASK]."""

    def __init__(self, prior: torch.Tensor):
        super().__init__()
        self.prior = prior

    def forward(self, input_ids, attention_mask=None):
        onehot = nn.functional.one_hot(input_ids, len(self.prior)).float()
        onehot[input_ids == 4] = 0.0
        return self.prior + 4.0 * onehot


def _batches(collator, seq, windows=8, width=400):
    items = [{"seq": seq[i * width:(i + 1) * width], "record": "r", "start": i * width, "end": (i + 1) * width,
              "index": i} for i in range(windows)]
    return [collator(items[i:i + 4]) for i in range(0, windows, 4)]



def test_a_model_that_copies_its_input_scores_the_prior_at_mask_and_the_old_basis_was_fooled():
    tokenizer = kmer_tokenizer(3)  # 64 k-mers: copying pays off, as it did with BPE-4096
    seq = "".join(np.random.default_rng(0).choice(list("ACGT"), 12_000))
    counts = torch.bincount(torch.tensor(tokenizer.encode(seq)), minlength=tokenizer.vocab_size)
    task = MLMTask({**MODEL, "vocab_size": tokenizer.vocab_size}, OPTIM)
    task.init_output_prior(counts)
    prior = task.head.bias.detach().clone()
    task.encoder, task.head = _Copy(prior), nn.Identity()
    task.log_dict = lambda metrics, **kw: task.__dict__.setdefault("logged", {}).update(metrics)

    for batch in _batches(MLMCollator(tokenizer, 512, 0.15, fixed_masks=True), seq, windows=24):
        assert (batch["input_ids"][batch["labels"] != IGNORE_INDEX] == 4).all()  # eval: every selected is [MASK]
        task._eval_step(batch)
    task._eval_epoch_end("val")
    honest = float(task.logged["val/loss"])
    counts1 = counts.double() + 1
    entropy = float(-(counts / counts.sum() * (counts1 / counts1.sum()).log()).sum())  # CE of the prior
    assert abs(honest - entropy) < 0.1, (honest, entropy)

    # On the training basis (80/10/10, all selected tokens) the same copier looks much better.
    train_batches = _batches(MLMCollator(tokenizer, 512, 0.15, fixed_masks=False), seq, windows=24)
    old = [task._masked_loss(b)[0].item() for b in train_batches]
    assert np.mean(old) < honest - 0.1


def test_at_initialisation_the_model_scores_the_unigram_baseline():
    tokenizer = char_tokenizer()
    seq = _markov_seq(4000)
    counts = torch.bincount(torch.tensor(tokenizer.encode(seq)), minlength=tokenizer.vocab_size)
    torch.manual_seed(0)
    task = MLMTask({**MODEL, "vocab_size": tokenizer.vocab_size}, OPTIM).eval()
    task.init_output_prior(counts)
    task.log_dict = lambda metrics, **kw: task.__dict__.setdefault("logged", {}).update(metrics)
    with torch.no_grad():
        for batch in _batches(MLMCollator(tokenizer, 512, 0.15, fixed_masks=True), seq):
            task._eval_step(batch)
    task._eval_epoch_end("val")
    counts1 = counts.double() + 1
    entropy = float(-(counts / counts.sum() * (counts1 / counts1.sum()).log()).sum())
    assert abs(float(task.logged["val/loss"]) - entropy) < 0.05
    assert float(task.logged["val/bp_per_token"]) == 1.0
    assert abs(float(task.logged["val/bits_per_base"]) - float(task.logged["val/loss"]) / math.log(2)) < 1e-4


def test_kmer_baselines_find_the_source_order_and_its_entropy():
    seq = _markov_seq(60_000, order=2)
    codes = encode(seq)
    causal, chosen = select_and_fit([codes[:50_000]], "causal", range(0, 5), both_strands=False)
    assert chosen["order"] >= 2
    rate = causal.bits(codes[50_000:]).mean()
    ent = -(np.array([0.85, 0.1, 0.04, 0.01]) * np.log2([0.85, 0.1, 0.04, 0.01])).sum()
    assert abs(rate - ent) < 0.05, (rate, ent)
    unigram = KmerModel.fit([codes[:50_000]], "causal", 0, 1.0, both_strands=False).bits(codes[50_000:]).mean()
    assert unigram > rate + 0.5  # order 0 is the unigram: far from the source
    bidirectional, _ = select_and_fit([codes[:50_000]], "bidirectional", range(0, 3), both_strands=False)
    assert bidirectional.bits(codes[50_000:]).mean() <= rate + 0.01


def test_many_short_records_count_and_score_as_they_would_one_by_one():
    """The chains join records with a context-breaking separator; the counts and the selection bits
    must equal counting and scoring each record alone (N inside a record still costs its bits)."""
    rng = np.random.default_rng(0)
    records = [encode(_markov_seq(int(n), order=2, seed=i)) for i, n in enumerate(rng.integers(3, 90, 40))]
    records[5][2] = 4  # an N inside a record
    for kind, order in (("causal", 3), ("bidirectional", 2)):
        joined = KmerModel.fit(records, kind, order, 0.1)
        for j in range(order + 1):
            alone = sum(KmerModel.fit([r], kind, order, 0.1).counts[j] for r in records)
            assert np.array_equal(joined.counts[j], alone), (kind, j)
        _, chosen = select_and_fit(records, kind, range(0, order + 1))
        fit_part = [r[: int(len(r) * 0.9)] for r in records]
        held = [r[int(len(r) * 0.9):] for r in records]
        counts = [sum(KmerModel.fit([r], kind, order, 0.01).counts[j] for r in fit_part) for j in range(order + 1)]
        bits = sum(KmerModel(kind, order, 0.01, counts).bits(h).sum() for h in held) / sum(len(h) for h in held)
        assert math.isclose(chosen["selection_bits_per_base"][f"{order}/0.01"], bits, rel_tol=1e-12)


def test_eval_tiles_cover_every_held_out_base_once():
    regions = [Region("a", 100, 1100), Region("b", 0, 250)]
    tiles = tile_regions(regions, window_bp=300)
    covered = {(r, i) for r, s, e in tiles for i in range(s, e)}
    assert len(covered) == sum(e - s for _, s, e in tiles) == 1000 + 250 - 0  # no overlap, no gap
    assert tiles[3] == ("a", 1000, 1100)
    assert len(tile_regions(regions, window_bp=10, max_windows=7)) == 7


def test_the_training_loss_gathers_the_collators_positions_and_equals_a_boolean_selection():
    """``selected_index`` (found on the host, so the loss needs no device sync) picks exactly the
    labelled positions; the loss and [MASK] accuracy equal those of a boolean selection."""
    tokenizer = char_tokenizer()
    seq = _markov_seq(4000, seed=1)
    torch.manual_seed(0)
    task = MLMTask({**MODEL, "vocab_size": tokenizer.vocab_size}, OPTIM).eval()
    for batch in _batches(MLMCollator(tokenizer, 512, 0.3, fixed_masks=False), seq):
        selected = batch["labels"] != IGNORE_INDEX
        assert torch.equal(batch["selected_index"], selected.flatten().nonzero()[:, 0])
        with torch.no_grad():
            loss, acc, count = task._masked_loss(batch)
            hidden = task.encoder(batch["input_ids"], batch["attention_mask"])
            logits = task.head(hidden[selected]).float()
            labels = batch["labels"][selected]
            at_mask = batch["input_ids"][selected] == 4
            want_loss = nn.functional.cross_entropy(logits, labels)
            want_acc = (logits.argmax(-1) == labels)[at_mask].float().mean()
            without_index = task._masked_loss({k: v for k, v in batch.items() if k != "selected_index"})
        assert count == int(selected.sum()) > 0
        torch.testing.assert_close(loss, want_loss) and torch.testing.assert_close(acc, want_acc)
        torch.testing.assert_close(without_index[0], want_loss)
