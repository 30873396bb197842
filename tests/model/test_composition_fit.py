"""``task.head.composition_fit=first``: the composition path is a k-mer LR fitted on the training
split before the network trains, then fixed; it gives the LR's own logits, travels with checkpoints
and exports, and a resumed run does not fit it again."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from bigbird_dna import BigBirdDNA
from bigbird_dna.data.labelled import LabelledDataModule, LabelledSequences
from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.baselines import run as baselines_run
from bigbird_dna.evaluation.baselines.cnn import CNNResult, train_cnn
from bigbird_dna.evaluation.baselines.kmer_lr import fit_kmer_lr
from bigbird_dna.evaluation.baselines.kmers import kmer_frequencies as lr_frequencies
from bigbird_dna.evaluation.baselines.sequences import encode_strings
from bigbird_dna.model.composition import FittedKmerComposition
from bigbird_dna.model.export import load_export
from bigbird_dna.tasks import stacking
from bigbird_dna.tasks.composition_fit import describe_fit, fit_composition_path
from bigbird_dna.tokenizer.fixed import char_tokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials
from tests.baselines.planted import random_dna, splits
from tests.conftest import LAMBDA
from tests.model.test_head_composition import COMPOSITION, classifier
from tests.training.test_weight_averaging import SCHEDULE

FIRST = {**COMPOSITION, "composition_fit": "first"}


def ids_of(seqs: list[str]) -> torch.Tensor:
    return encode_with_specials(char_tokenizer(), seqs, 512)[0]


def test_an_unfitted_path_adds_nothing_and_has_no_parameters_to_train():
    net = classifier(FIRST).eval()
    assert isinstance(net.head.composition, FittedKmerComposition)
    assert not [n for n, _ in net.named_parameters() if "composition" in n]
    ids = ids_of(["ACGTTGCA" * 8, "GGGCCCAT" * 4])
    torch.testing.assert_close(net.head.composition(ids), torch.zeros(2, 2), atol=0, rtol=0)
    with pytest.raises(InputError, match="composition_fit='later'"):
        classifier({**FIRST, "composition_fit": "later"})


def test_a_fitted_path_gives_the_logistic_regressions_own_logits():
    data = splits(300, 90, seed=0)
    codes = {s: encode_strings(d.seqs)[0] for s, d in data.items()}
    x = {s: lr_frequencies(c, 3, oriented=True) for s, c in codes.items()}
    model = fit_kmer_lr(x["train"], data["train"].labels, x["val"], data["val"].labels, "binary", max_k=3,
                        oriented=True)
    path = FittedKmerComposition(4, 1)  # the fit uses k <= 3 of the path's k <= 4
    path.load_fit(model.standardiser.mean, model.standardiser.std, model.weight, model.bias)
    assert bool(path.fitted) and path.weight[:, model.weight.shape[0]:].abs().sum() == 0
    logits = path(ids_of(data["test"].seqs))
    torch.testing.assert_close(torch.sigmoid(logits), model.predict(x["test"]), atol=1e-5, rtol=0)


def test_fitting_skips_data_without_in_memory_splits_and_reads_both_strands_where_the_data_does():
    unfit = FittedKmerComposition(2, 1)
    assert "in-memory train and val" in fit_composition_path(unfit, object())["skipped"]
    assert bool(unfit.fitted) and unfit.weight.abs().sum() == 0
    data = splits(200, 60, seed=1)
    flipped = LabelledDataModule(data, batch_size=8, num_workers=0, seed=0, reverse_complement_prob=0.5)
    path = FittedKmerComposition(2, 1)
    fit = fit_composition_path(path, flipped, judge="chance")
    assert fit["both_strands"] and fit["rows"] == 2 * len(data["train"]) and bool(path.fitted)
    oriented = LabelledDataModule(data, batch_size=8, num_workers=0, seed=0, eval_reverse_complement=False)
    assert fit_composition_path(FittedKmerComposition(2, 1), oriented, judge="chance")["rows"] == len(data["train"])


def test_a_fit_no_better_than_chance_on_val_is_not_kept():
    data = splits(400, 60, seed=2)
    rng = np.random.default_rng(0)
    for split in data.values():  # labels that no k-mer predicts
        split.labels[:] = rng.permutation(split.labels)
    path = FittedKmerComposition(3, 1)
    fit = fit_composition_path(path, LabelledDataModule(data, batch_size=8, num_workers=0, seed=0))
    assert not fit["kept"] and fit["val_auroc"] <= fit["kept_above"] and bool(path.fitted)
    assert "not above chance" in describe_fit(fit) and fit["cnn_val_auroc"] is None  # no CNN judged a fit at chance
    assert path.weight.abs().sum() == 0 and path.bias.abs().sum() == 0
    assert fit["folds"] == 0 and int(path.folds) == 0  # nor any out-of-fold fit
    planted = fit_composition_path(FittedKmerComposition(3, 1),
                                   LabelledDataModule(splits(400, 60, seed=2), batch_size=8, num_workers=0, seed=0),
                                   judge="chance")
    assert planted["kept"] and planted["val_auroc"] > planted["kept_above"] > 0.5 and planted["folds"] == 5


def test_sequences_longer_than_the_model_reads_are_fitted_on_the_bases_it_reads_their_first():
    """Planted motifs in the first 60 bases, then 240 random ones: the model reads the first 60
    (max_bases), so the fit must count those, not the 60 central bases, which carry no label."""
    rng = np.random.default_rng(7)
    data = splits(400, 60, seed=2)
    for split in data.values():
        split.seqs[:] = [seq + random_dna(rng, 240) for seq in split.seqs]
    path = FittedKmerComposition(3, 1)
    fit = fit_composition_path(path, LabelledDataModule(data, batch_size=8, num_workers=0, seed=0,
                                                        eval_reverse_complement=False), max_bases=60,
                               judge="chance")
    assert fit["kept"] and fit["val_auroc"] > 0.8, fit
    reads = ids_of(data["test"].seqs)[:, :61]  # [CLS] and the first 60 bases, as encode_with_specials cuts
    with torch.no_grad():
        scores = path.eval()(reads)[:, 0].numpy()
    assert roc_auc_score(data["test"].labels, scores) > 0.8


def lambda_windows_by_gc(count: int = 300, length: int = 100) -> tuple[list[str], np.ndarray]:
    """``count`` windows of lambda, labelled 1 where their GC count is at least the median: a label
    that composition (1-mer frequencies) gives exactly and a max-pooled CNN only roughly."""
    genome = "".join(line.strip() for line in LAMBDA.read_text().splitlines()[1:])
    windows = [genome[i * 160:i * 160 + length] for i in range(count)]
    median = sorted(w.count("G") + w.count("C") for w in windows)[count // 2]
    return windows, np.array([float(w.count("G") + w.count("C") >= median) for w in windows], np.float32)


def test_the_cnn_judge_drops_a_fit_where_motifs_carry_the_task_and_keeps_it_where_composition_does():
    """A planted 8-mer: the small CNN finds it on val better than any k-mer LR of k <= 3, so the
    path stays at zero; the GC-share label: the LR gives it exactly, and the fit is kept."""
    motif = LabelledDataModule(splits(400, 100, seed=3), batch_size=8, num_workers=0, seed=0)
    path = FittedKmerComposition(3, 1)
    fit = fit_composition_path(path, motif)
    assert fit["cnn_val_auroc"] > fit["val_auroc"] > fit["kept_above"], fit
    assert not fit["kept"] and path.weight.abs().sum() == 0 and int(path.folds) == 0 and bool(path.fitted)
    assert isinstance(fit["cnn"], CNNResult) and fit["cnn"].seconds > 0
    assert f"below the small CNN's {fit['cnn_val_auroc']:.4f}" in describe_fit(fit)
    assert fit_composition_path(FittedKmerComposition(3, 1), motif, judge="chance")["kept"]  # the old rule kept it
    seqs, labels = lambda_windows_by_gc()
    gc = {"train": LabelledSequences(seqs[:200], labels[:200]), "val": LabelledSequences(seqs[200:], labels[200:])}
    kept = fit_composition_path(FittedKmerComposition(3, 1), LabelledDataModule(gc, batch_size=8, num_workers=0,
                                                                                seed=0))
    assert kept["chosen_on"] == "val" and kept["kept"] and kept["val_auroc"] >= kept["cnn_val_auroc"], kept
    assert "at least the small CNN's" in describe_fit(kept) and "fixed from here" in describe_fit(kept)
    with pytest.raises(InputError, match="composition_judge='best'"):
        fit_composition_path(FittedKmerComposition(3, 1), motif, judge="best")


@pytest.fixture
def gc_labelled(tmp_path):
    """300 windows of lambda labelled by their GC share; with ``data.val_fraction=0.34``, 102
    validation rows: enough to choose the fit, and to judge it against the small CNN, on val."""
    windows, labels = lambda_windows_by_gc()
    table = tmp_path / "gc.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{w}\t{int(y)}\n" for w, y in zip(windows, labels)))
    return table


def test_a_run_fits_first_keeps_the_fit_fixed_exports_it_and_a_resume_does_not_fit_again(
        gc_labelled, train_in_process, tmp_path, monkeypatch):
    fits, judged, scored = [], [], []

    def counted(path, *args, **kwargs):
        fit = fit_composition_path(path, *args, **kwargs)
        fits.append({k: v.clone() for k, v in path.state_dict().items()})
        judged.append(fit["cnn_val_auroc"])
        scored.append(fit["val_auroc"])
        return fit

    monkeypatch.setattr(stacking, "fit_composition_path", counted)
    cnns = []
    monkeypatch.setattr(baselines_run, "train_cnn", lambda *a, **k: cnns.append(1) or train_cnn(*a, **k))
    run_dir = tmp_path / "run"
    overrides = (*SCHEDULE, f"data.train={gc_labelled}", "data.batch_size=32", "tokenizer=char",
                 "task.head.composition=3",
                 "task.head.composition_fit=first", "data.val_fraction=0.34", "data.baselines.enabled=true")
    first, _ = train_in_process(*overrides, "trainer.max_epochs=1", run_dir=run_dir)
    assert len(fits) == 1 and fits[0]["weight"].abs().sum() > 0
    # the CNN that judged the fit (composition kept: the LR scores GC exactly) is the summary's baseline
    assert judged[0] is not None and len(cnns) == 1 and first["baseline/cnn/seconds"] > 0
    assert f"baseline/cnn/{first['baseline/split']}_auroc" in first
    # its training counts in both baselines' time, as a CNN trained by the summary would
    assert first["baseline/seconds"] >= first["baseline/cnn/seconds"] + first["baseline/kmer_lr/seconds"] - 0.1
    state = torch.load(first["last_checkpoint"], map_location="cpu", weights_only=False)["state_dict"]
    for name, value in fits[0].items():  # training did not move the fit
        assert torch.equal(state[f"head.composition.{name}"], value), name
    exported = load_export(run_dir / "export")
    assert exported.task_config["head"]["composition_fit"] == "first"
    assert torch.equal(exported.state_dict["head.composition.weight"], fits[0]["weight"])
    second, _ = train_in_process(*overrides, "trainer.max_epochs=2", "ckpt_path=last", run_dir=run_dir)
    assert len(fits) == 1 and second["global_step"] == 2 * first["global_step"]
    # the summary sets the network against the kept path's own val AUROC, also after a resume without a fit
    assert first["composition/val_auroc"] == second["composition/val_auroc"] == scored[0]
    assert len(cnns) == 2  # no fit on resume, so the summary trained its own


def test_an_export_with_a_fitted_path_predicts_as_the_training_module(tmp_path):
    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.tasks.classification import SequenceClassificationTask
    from tests.model.test_hybrid_exports import MODEL, WINDOW, windows

    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    module = SequenceClassificationTask({**MODEL, "vocab_size": tokenizer.vocab_size, "pad_id": tokenizer.pad_id},
                                        {}, num_labels=2, head=FIRST, tokenizer_sha256=tokenizer.sha256,
                                        tokenizer_json=tokenizer.to_str())
    features = 84  # k = 1..3
    generator = np.random.default_rng(0)
    module.head.composition.load_fit(torch.rand(features) / 10, torch.rand(features) + 0.5,
                                     torch.from_numpy(generator.normal(size=(features, 2))).float(), torch.ones(2))
    seqs = windows(3, WINDOW) + windows(2, 61)
    ids, mask, _ = encode_with_specials(tokenizer, seqs, module.config.max_input_tokens)
    module.eval()
    with torch.no_grad():
        want = module.probabilities(module(ids, mask))
    path = write_hf_export(tmp_path / "classify", "classify", module.state_dict(), module.config.to_dict(), tokenizer,
                           module.output, task_config={"name": "classify", "head": FIRST})
    model = BigBirdDNA.from_pretrained(path, device="cpu", precision="fp32")
    assert isinstance(model.module.head.composition, FittedKmerComposition)
    torch.testing.assert_close(model.predict(seqs, strands="+"), want, atol=1e-5, rtol=0)
