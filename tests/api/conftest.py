"""Models trained once per session from bundled data: an MLM on lambda and a promoter classifier
on the planted tac element (the tests' fast settings), shared by the API, embed and variants tests."""

from __future__ import annotations

import pytest

from bigbird_dna.demo.synthetic_promoters import planted_sequences
from tests.conftest import LAMBDA, compose
from tests.promoter.conftest import PROMOTER_FAST

PROMOTER_BP = 240  # planted sequences: the element sits at [165, 194)


@pytest.fixture(scope="session")
def mlm_export(tmp_path_factory):
    from bigbird_dna.train import run

    run_dir = tmp_path_factory.mktemp("mlm") / "run"
    run(compose(["debug=fast", f"data.fasta={LAMBDA}"], run_dir))
    return run_dir / "export"


@pytest.fixture(scope="session")
def promoter_export(tmp_path_factory):
    """A promoter classifier that learned the planted element (validation AUROC >= 0.9 in
    tests/promoter/test_train_promoter.py with the same settings)."""
    from bigbird_dna.train import run

    folder = tmp_path_factory.mktemp("promoter")
    seqs, labels = planted_sequences(400, PROMOTER_BP, 200, seed=1)
    table = folder / "planted.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in zip(seqs, labels)))
    overrides = [*PROMOTER_FAST, "task=promoter", "data=promoter_labelled", f"data.train={table}",
                 "data.val_fraction=0.25", "data.batch_size=16", "trainer.max_steps=150",
                 "trainer.val_check_interval=75", "trainer.check_val_every_n_epoch=null",
                 "task.predict_window_bp=240"]
    summary = run(compose(overrides, folder / "run"))
    assert summary["val/auroc"] >= 0.9, summary
    return folder / "run" / "export"
