"""Tests of python -m bigbird_dna.evaluate and the statistics, folds and published numbers it reports."""
