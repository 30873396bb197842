"""Simple classification baselines a DNA language model is judged against: k-mer logistic
regression and a small CNN, trained on the same train split and scored on the same test split.

:func:`run_baselines` is the entry point (``LabelledDataModule.reference_metrics`` calls it).
"""

from bigbird_dna.evaluation.baselines.run import baseline_settings, run_baselines

__all__ = ["baseline_settings", "run_baselines"]
