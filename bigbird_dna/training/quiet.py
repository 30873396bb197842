"""Lightning's start-up noise, silenced so the run's own lines stand out: advice to install cloud
loggers, a deprecation inside Lightning's own code, a warning about ``IterableDataset.__len__`` (our
window datasets define it on purpose: every rank reaches it), the ``srun`` hint on machines that have
SLURM installed but run locally, and, when a short run ends before its first validation, the
checkpoint's note that its metric is missing. Everything else Lightning says is kept."""

from __future__ import annotations

import logging
import warnings

# (message pattern, why it is noise) of Python warnings
WARNINGS = (
    (r".*`isinstance\(treespec, LeafSpec\)` is deprecated", "inside Lightning's own code"),
    (r"Your `IterableDataset` has `__len__` defined", "GenomeWindows and the DeepSEA stream define it on purpose"),
    (r"The `srun` command is available on your system but is not used", "SLURM installed, run locally"),
    (r".*could not find the monitored key in the returned metrics", "a run shorter than its first validation"),
)
TIP = "💡 Tip:"  # Lightning's advice to install its cloud logger and model registry


class _DropTips(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith(TIP)


def quiet_lightning() -> None:
    """Install the filters (idempotent); call it before the Trainer is built."""
    for pattern, _why in WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    for name in ("lightning.pytorch.utilities.rank_zero", "lightning.fabric.utilities.rank_zero"):
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropTips) for f in logger.filters):
            logger.addFilter(_DropTips())
