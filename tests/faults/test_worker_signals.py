"""DataLoader workers ignore the signals a scheduler sends to every process of a job, so the main
process can stop at a step boundary with a checkpoint instead of dying of a killed worker."""
import os
import signal
import time

import pytest
from torch.utils.data import DataLoader

from bigbird_dna.data.loaders import ignore_stop_signals


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGUSR1, signal.SIGINT])
def test_a_signalled_worker_keeps_serving_batches(stop):
    loader = DataLoader(range(40), batch_size=2, num_workers=1, worker_init_fn=ignore_stop_signals)
    batches = iter(loader)
    first = next(batches)
    os.kill(batches._workers[0].pid, stop)
    time.sleep(0.5)
    rest = list(batches)  # without the handler: RuntimeError, DataLoader worker killed by signal
    assert [int(x) for b in [first, *rest] for x in b] == list(range(40))


def test_the_labelled_datamodules_loaders_install_it():
    from bigbird_dna.data.labelled import LabelledDataModule
    from bigbird_dna.tokenizer import char_tokenizer
    from tests.baselines.planted import splits

    module = LabelledDataModule(splits(40, 80, seed=0), batch_size=8, num_workers=1, seed=0,
                                baselines={"enabled": False})
    module.attach_tokenizer(char_tokenizer(), 128)
    for loader in (module.train_dataloader(), module.val_dataloader()):
        assert loader.worker_init_fn is ignore_stop_signals
