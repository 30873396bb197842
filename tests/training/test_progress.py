"""LineProgress: plain step lines for a batch log, however few the steps."""

from lightning.pytorch.callbacks import TQDMProgressBar

from bigbird_dna.training.progress import LineProgress, progress_bar


class FakeTrainer:
    global_step = 0
    current_epoch = 0
    max_epochs = None
    num_training_batches = 10
    callback_metrics: dict = {}
    progress_bar_metrics = {"train/loss": 1.5}
    loggers: list = []

    def __init__(self, max_steps: int):
        self.max_steps = max_steps
        self.estimated_stepping_batches = max_steps


def _step_lines(capsys, max_steps: int, every: int = 50, batches_per_step: int = 1) -> list[str]:
    bar, trainer = LineProgress(every=every), FakeTrainer(max_steps)
    bar.on_train_start(trainer, None)
    for step in range(1, max_steps + 1):
        trainer.global_step = step
        for _ in range(batches_per_step):
            bar.on_train_batch_end(trainer, None, None, None, step)
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]


def test_terminal_gets_a_tqdm_bar_and_a_log_file_gets_plain_lines():
    assert isinstance(progress_bar(10, interactive=True), TQDMProgressBar)  # a ThrottledTQDM
    line = progress_bar(10, interactive=False)
    assert isinstance(line, LineProgress)
    assert line.every >= 50, "a batch log should not get a line per step"


def test_long_run_prints_the_first_step_then_one_line_every_n_steps(capsys):
    lines = _step_lines(capsys, 1000)
    assert [line.split()[1] for line in lines] == [f"{step}/1000" for step in [1, *range(50, 1001, 50)]]
    assert "train/loss=1.5" in lines[-1]
    assert "\r" not in "".join(lines)


def test_a_3_step_run_prints_every_step(capsys):
    assert [line.split()[1] for line in _step_lines(capsys, 3)] == ["1/3", "2/3", "3/3"]


def test_a_short_run_prints_about_ten_lines_and_its_last_step(capsys):
    steps = [int(line.split()[1].split("/")[0]) for line in _step_lines(capsys, 47)]
    assert steps == [1, 4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 47]


def test_accumulated_batches_of_one_step_print_it_once(capsys):
    assert [line.split()[1] for line in _step_lines(capsys, 3, batches_per_step=4)] == ["1/3", "2/3", "3/3"]


def test_step_lines_also_reach_the_log_file_once(capsys, tmp_path):
    import logging

    handler = logging.FileHandler(tmp_path / "train.log")
    logging.getLogger().addHandler(handler)
    try:
        lines = _step_lines(capsys, 3)
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()
    assert [line.split()[1] for line in lines] == ["1/3", "2/3", "3/3"]  # stdout as before
    logged = [line for line in (tmp_path / "train.log").read_text().splitlines() if "step " in line]
    assert [line.split()[1] for line in logged] == ["1/3", "2/3", "3/3"]


def test_the_terminal_bar_reads_the_metrics_at_most_twice_a_second(monkeypatch):
    from bigbird_dna.training import progress

    reads = []

    class CountingTrainer(FakeTrainer):
        @property
        def progress_bar_metrics(self):
            reads.append(1)  # on a GPU each read is a device sync
            return {"train/loss": 1.5}

    clock = [100.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    bar, trainer = progress.ThrottledTQDM(), CountingTrainer(10)
    for _ in range(20):  # 20 steps within 0.2 s: one read
        assert bar.get_metrics(trainer, None)["train/loss"] == 1.5
        clock[0] += 0.01
    assert len(reads) == 1
    clock[0] += 0.5
    bar.get_metrics(trainer, None)
    assert len(reads) == 2
    bar._refresh()  # after a validation, or at an epoch's end: read again at once
    bar.get_metrics(trainer, None)
    assert len(reads) == 3


def test_a_slow_validation_writes_a_line_at_least_every_interval(capsys, monkeypatch):
    """In a log, a validation of many slow batches shows it is alive (every EVERY_S: 30 s; 0.05 s here)."""
    import time

    from bigbird_dna.runtime import heartbeat

    monkeypatch.setattr(heartbeat, "EVERY_S", 0.05)
    bar, trainer = LineProgress(every=50), FakeTrainer(10)
    trainer.sanity_checking, trainer.num_val_batches = False, [6]
    bar.on_validation_start(trainer, None)
    for index in range(6):
        time.sleep(0.06)  # a slowed model: each batch takes longer than the interval
        bar.on_validation_batch_end(trainer, None, None, None, index)
    bar.on_validation_end(trainer, None)
    lines = capsys.readouterr().out.splitlines()
    beats = [line for line in lines if line.startswith("validating at step 0:")]
    assert len(beats) >= 4 and beats[-1].startswith("validating at step 0: ") and "/6 batches" in beats[-1], lines
    assert lines[-1].startswith("validation at step 0:")


def test_epoch_runs_show_the_epoch_the_batch_and_an_upper_bound(capsys):
    """Early-stopped epochs: no 'step 6550/nan', but the epoch, the batch in it and the most left."""
    bar, trainer = LineProgress(every=5), FakeTrainer(-1)
    trainer.max_epochs, trainer.num_training_batches, trainer.estimated_stepping_batches = 3, 10, 30
    bar.on_train_start(trainer, None)
    for step in range(1, 31):
        trainer.global_step, trainer.current_epoch = step, (step - 1) // 10
        bar.on_train_batch_end(trainer, None, None, None, (step - 1) % 10)
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert lines[0].startswith("step 1/30 (epoch 1/3, batch 1/10) |") and "nan" not in " ".join(lines)
    assert any(line.startswith("step 30/30 (epoch 3/3, batch 10/10)") for line in lines), lines
    assert all("s left" in line or "time left unknown" in line for line in lines)

