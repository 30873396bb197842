"""``python -m bigbird_dna.explain``: attribution tracks, TF-MoDISco files and figures
(:mod:`bigbird_dna.explain.__main__`)."""
