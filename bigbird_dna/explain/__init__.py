"""``python -m bigbird_dna.explain``: attribution tracks, TF-MoDISco files and figures per region."""
