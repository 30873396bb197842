"""The shuffle contrast (``task.shuffle_contrast_steps``): what a resampled copy keeps and breaks,
which loss a step trains, that early stopping waits for the labels, and that exports leave the
warm-up's score out."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from bigbird_dna.errors import InputError
from bigbird_dna.model.export import load_export
from bigbird_dna.tasks.classification import SequenceClassificationTask
from bigbird_dna.tasks.shuffle_contrast import ShuffleContrast, body_mask, markov_resample
from bigbird_dna.training.early_stopping import early_stopping
from tests.conftest import LAMBDA
from tests.promoter.conftest import TINY_MODEL

HYBRID = {**TINY_MODEL, "vocab_size": 8, "stem": {"kernel": 5, "channels": 8, "blocks": 0, "pool": 2}}
MOTIF = "GCCACCAGGGGGCGC"  # CTCF's consensus


def _lambda(length: int) -> np.ndarray:
    genome = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])[:length]
    return np.frombuffer(genome.encode(), np.uint8).copy()


def _dinucleotides(codes: np.ndarray) -> np.ndarray:
    return np.bincount(codes[:-1] * 4 + codes[1:], minlength=16) / (len(codes) - 1)


def test_the_body_is_every_real_token_between_cls_and_sep():
    ids = torch.ones(2, 6, dtype=torch.long)
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]], dtype=torch.bool)
    assert body_mask(ids, mask).tolist() == [[False, True, True, True, True, False],
                                             [False, True, True, False, False, False]]
    assert body_mask(ids, None).tolist() == [[False, True, True, True, True, False]] * 2


def test_a_resampled_row_keeps_its_dinucleotides_and_frame_and_loses_its_motifs():
    bases = _lambda(4000)
    codes = np.searchsorted(np.frombuffer(b"ACGT", np.uint8), bases)
    for start in range(100, 3900, 400):  # ten planted sites, read forward
        codes[start:start + len(MOTIF)] = np.searchsorted(np.frombuffer(b"ACGT", np.uint8),
                                                          np.frombuffer(MOTIF.encode(), np.uint8))
    ids = torch.tensor(np.concatenate([[5], codes + 1, [6], [0, 0]]))[None]  # [CLS]=5, bases 1-4, [SEP]=6, padding 0
    mask = ids != 0
    torch.manual_seed(0)
    out = markov_resample(ids, body_mask(ids, mask))[0]
    assert out[0] == 5 and out[-3] == 6 and out[-2:].tolist() == [0, 0] and out[1] == ids[0, 1]
    assert set(out[1:-3].tolist()) <= {1, 2, 3, 4}, "specials and padding are never drawn into the body"
    resampled = out[1:-3].numpy() - 1
    # lambda's dinucleotide frequencies (CpG and ApA differ by 2x) are kept within sampling noise ...
    assert np.abs(_dinucleotides(resampled) - _dinucleotides(codes)).max() < 0.012
    # ... where a base-level shuffle drifts further, and the planted 15-mer is gone
    text = "".join("ACGT"[c] for c in resampled)
    assert text.count(MOTIF) == 0 and "".join("ACGT"[c] for c in codes).count(MOTIF) == 10


def test_a_resample_differs_per_row_and_each_row_draws_from_its_own_tokens():
    ids = torch.tensor([[5] + [1, 2] * 20 + [6], [5] + [3, 4, 4] * 13 + [4, 6]])
    out = markov_resample(ids, body_mask(ids, None))
    assert set(out[0, 1:-1].tolist()) == {1, 2} and out[0, 1:-1].tolist() == [1, 2] * 20, \
        "an alternating row has only one path through its own chain"
    assert set(out[1, 1:-1].tolist()) <= {3, 4}


def test_large_vocabularies_resample_in_linear_memory_along_the_rows_own_pairs():
    torch.manual_seed(0)
    vocabulary = torch.randint(1000, 31000, (20,))  # BPE-like ids: a dense 31000 x 31000 table per row would be 4 GB
    tokens = vocabulary[torch.randint(0, 20, (3, 200))]
    tokens[:, -1] = tokens[:, 5]  # the last body token occurs earlier too, so every draw follows a pair
    ids = torch.cat([torch.full((3, 1), 1), tokens, torch.full((3, 1), 2)], dim=1)
    out = markov_resample(ids, body_mask(ids, None))
    for row in range(3):
        pairs = set(zip(ids[row, 1:-2].tolist(), ids[row, 2:-1].tolist()))
        drawn = list(zip(out[row, 1:-2].tolist(), out[row, 2:-1].tolist()))
        assert all(pair in pairs for pair in drawn), "each drawn token follows its predecessor somewhere in the row"
    assert not torch.equal(out, ids)


def _task(steps: int) -> SequenceClassificationTask:
    torch.manual_seed(0)
    return SequenceClassificationTask(HYBRID, {}, num_labels=1, head={"pooling": "mean_max"},
                                      shuffle_contrast_steps=steps)


def _batch() -> dict[str, torch.Tensor]:
    ids = torch.randint(1, 5, (4, 30))
    ids[:, 0], ids[:, -1] = 5, 6
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids, dtype=torch.bool),
            "labels": torch.tensor([[1.0], [0.0], [1.0], [0.0]])}


@pytest.mark.parametrize("warming", [True, False])
def test_a_step_trains_the_contrast_then_the_labels_and_every_parameter_takes_part(warming):
    task = _task(steps=1)
    task.train()
    if not warming:
        task.shuffle_contrast.steps = 0  # as after the warm-up
    batch = _batch()
    torch.manual_seed(1)
    loss, kind = task.training_loss(batch)
    assert kind == ("contrast" if warming else "labels") and task.in_label_free_warmup is warming
    loss.backward()
    assert all(p.grad is not None for p in task.parameters()), "DDP needs every parameter in the graph"
    moved = task.shuffle_contrast.score.weight.grad.abs().sum() > 0
    assert bool(moved) is warming, "the contrast's score learns during the warm-up only"
    head_moved = task.head.out.weight.grad.abs().sum() > 0
    assert bool(head_moved) is not warming, "the labels are not read during the warm-up"
    batch["labels"] = 1 - batch["labels"]
    torch.manual_seed(1)
    flipped = task.training_loss(batch)[0]
    assert bool(torch.isclose(flipped, loss, atol=1e-6)) is warming


def test_the_contrast_loss_is_bce_of_real_first_then_resampled():
    contrast = ShuffleContrast(3, steps=5)
    with torch.no_grad():
        contrast.score.weight.copy_(torch.tensor([[1.0, 0.0, 0.0]]))
        contrast.score.bias.zero_()
    pooled = torch.tensor([[4.0, 0, 0], [4.0, 0, 0], [-4.0, 0, 0], [-4.0, 0, 0]])
    with torch.no_grad():
        assert float(contrast.loss(pooled)) == pytest.approx(float(torch.nn.functional.softplus(torch.tensor(-4.0))),
                                                             rel=1e-5)
        assert float(contrast.loss(-pooled)) > 4.0
    with pytest.raises(InputError, match="shuffle_contrast_steps=-1"):
        ShuffleContrast(3, steps=-1)
    assert _task(steps=0).shuffle_contrast is None


def test_early_stopping_neither_counts_nor_keeps_a_validation_of_the_warm_up():
    stopper = early_stopping("val/auroc", "max", patience=1)
    warming = SimpleNamespace(lightning_module=SimpleNamespace(in_label_free_warmup=True))
    stopper._run_early_stopping_check(warming)  # returns before reading any metric
    assert stopper.wait_count == 0 and torch.isinf(stopper.best_score)


def test_a_run_with_a_warm_up_exports_without_the_contrast_score(tmp_path, train_in_process):
    genome = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])
    table = tmp_path / "planted.tsv"
    table.write_text("sequence\tlabel\n" + "".join(
        f"{genome[i * 150:i * 150 + 60]}{MOTIF if i % 2 else genome[i * 150 + 60:i * 150 + 75]}"
        f"{genome[i * 150 + 75:i * 150 + 120]}\t{i % 2}\n" for i in range(40)))
    summary, run_dir = train_in_process(
        "task=promoter", "data=promoter_labelled", f"data.train={table}", "data.val_fraction=0.25",
        "data.batch_size=8", "data.num_workers=0", "data.baselines.enabled=false", "trainer.max_steps=-1",
        "trainer.max_epochs=3", "trainer.val_check_interval=1.0", "trainer.check_val_every_n_epoch=1",
        "task.schedule.small_train_sequences=null", "task.shuffle_contrast_steps=6",
        "model.stem.channels=8", "model.hidden_size=32", "model.intermediate_size=64")
    assert summary["global_step"] == 12
    checkpoint = torch.load(run_dir / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert any(k.startswith("shuffle_contrast.") for k in checkpoint["state_dict"]), "resume keeps the score"
    export = load_export(run_dir / "export")
    assert not any(k.startswith("shuffle_contrast.") for k in export.state_dict)
    assert export.task_config["shuffle_contrast_steps"] == 6


def test_mlm_pretraining_adds_the_contrast_of_every_window_and_exports_without_it():
    """task=mlm task.shuffle_contrast=w: the training loss is the MLM's cross-entropy on the real
    rows plus w times the contrast's BCE over the 2B rows; evaluation and exports know nothing of it."""
    from bigbird_dna.data.mlm.masking import IGNORE_INDEX
    from bigbird_dna.tasks.mlm import MLMTask

    torch.manual_seed(0)
    task, plain = MLMTask(HYBRID, {}, shuffle_contrast=0.5), MLMTask(HYBRID, {})
    plain.load_state_dict(task.export_weights(task.state_dict()))
    assert set(task.export_weights(task.state_dict())) == set(plain.state_dict())
    batch = _batch()
    batch.pop("labels")
    labels = torch.full_like(batch["input_ids"], IGNORE_INDEX)
    labels[:, 3:9] = batch["input_ids"][:, 3:9]
    batch["labels"] = labels
    task.train(), plain.train()
    torch.manual_seed(1)
    loss = task._masked_loss(batch)[0]
    contrast = task.contrast_loss
    assert contrast is not None and float(contrast.detach()) > 0.5 * 0.3, "an untrained score: half a BCE near log 2"
    # the contrast's rows normalise the stem's batch statistics with the real ones, so the MLM part
    # is compared with a plain model that reads the same 2B rows
    torch.manual_seed(1)
    rows, mask = task.shuffle_contrast.inputs(batch["input_ids"], batch["attention_mask"])
    hidden = plain.encoder(rows, mask)[:4]
    cross_entropy = torch.nn.functional.cross_entropy(plain.head(hidden[labels != IGNORE_INDEX]),
                                                      labels[labels != IGNORE_INDEX])
    torch.testing.assert_close(loss.detach(), (cross_entropy + contrast).detach(), rtol=1e-5, atol=1e-6)
    loss.backward()
    assert task.shuffle_contrast.contrast.score.weight.grad.abs().sum() > 0
    with pytest.raises(InputError, match="shuffle_contrast=-1"):
        MLMTask(HYBRID, {}, shuffle_contrast=-1)
