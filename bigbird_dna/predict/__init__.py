"""``python -m bigbird_dna.predict``: the command line over the inference layer's genome scans
(:mod:`bigbird_dna.inference.predictors`)."""

from bigbird_dna.predict.cli import main

__all__ = ["main"]
