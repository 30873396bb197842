"""``python -m bigbird_dna.evaluate``: the model and both baselines trained and scored on the same
k folds (or seeds on a dataset's own split), summarised as papers report them."""
