from lightning.pytorch.callbacks import TQDMProgressBar

from bigbird_dna.runtime.progress import LineProgress, progress_bar


def test_terminal_gets_a_tqdm_bar_and_a_log_file_gets_plain_lines():
    assert isinstance(progress_bar(10, interactive=True), TQDMProgressBar)
    line = progress_bar(10, interactive=False)
    assert isinstance(line, LineProgress)
    assert line.every >= 50, "a batch log should not get a line per step"


def test_line_progress_prints_one_line_every_n_steps(capsys):
    class Trainer:
        max_steps = 200
        global_step = 0
        callback_metrics = {}
        progress_bar_metrics = {"train/loss": 1.5}
        loggers = []

    bar = LineProgress(every=50)
    trainer = Trainer()
    bar.on_train_start(trainer, None)
    for step in range(1, 201):
        trainer.global_step = step
        bar.on_train_batch_end(trainer, None, None, None, step)
    lines = [l for l in capsys.readouterr().out.splitlines() if l.startswith("step ")]
    assert len(lines) == 4
    assert lines[-1].startswith("step 200/200") and "train/loss=1.5" in lines[-1]
    assert "\r" not in "".join(lines)
