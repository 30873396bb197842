"""``python -m bigbird_dna.score``: per-base masked-marginal log-likelihood tracks (bedGraph, bigWig)
over genome regions, from an MLM export; the scoring itself is :mod:`bigbird_dna.inference.likelihood`."""
