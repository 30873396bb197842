"""Prediction from exported models: one driver for windows, strands and devices (:mod:`.driver`),
one module per task (``promoter``, ``chromatin``), and the CLI (:mod:`.cli`)."""

from bigbird_dna.predict.cli import main

__all__ = ["main"]
