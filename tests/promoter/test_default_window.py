"""A classifier's default prediction window is one its model can read: the length of the sequences it
trained on (task.predict_window_bp: null), recorded in the export and used by predict without --window."""

from __future__ import annotations

from bigbird_dna.demo.synthetic_promoters import planted_sequences
from bigbird_dna.model.export import load_export
from bigbird_dna.predict import main
from tests.conftest import compose
from tests.promoter.conftest import PROMOTER_FAST, lambda_seq, write_fasta


def test_the_export_records_the_training_length_and_predict_uses_it(tmp_path):
    from bigbird_dna.train import run

    seqs, labels = planted_sequences(64, 240, 200, seed=1)
    table = tmp_path / "planted.tsv"
    table.write_text("sequence\tlabel\n" + "".join(f"{s}\t{y}\n" for s, y in zip(seqs, labels)))
    run(compose([*PROMOTER_FAST, "task=promoter", "data=promoter_labelled", f"data.train={table}",
                 "data.val_fraction=0.25", "trainer.max_steps=2", "trainer.val_check_interval=2",
                 "trainer.check_val_every_n_epoch=null", "task.schedule.patience=null",
                 "task.schedule.max_epochs=null", "task.schedule.max_steps=2",
                 "task.schedule.val_check_interval=2", "task.schedule.check_val_every_n_epoch=null"],
                tmp_path / "run"))
    export = load_export(tmp_path / "run" / "export")
    assert export.task_config["predict_window_bp"] == 240
    fasta = write_fasta(tmp_path / "g.fa", {"chrA": lambda_seq()[:1000]})
    (tsv, _bed) = main(["--model", str(tmp_path / "run" / "export"), str(fasta), "--out-prefix",
                        str(tmp_path / "out"), "--device", "cpu", "--no-progress"])
    rows = [line.split("\t") for line in tsv.read_text().splitlines()[2:]]
    assert rows and all(int(end) - int(start) == 240 for _, start, end, *_ in rows)
