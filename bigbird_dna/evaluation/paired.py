"""Summaries over folds (or seeds) and the paired comparison of two models scored on the same folds.

- :func:`mean_sd`: mean and sample standard deviation (``ddof=1``) of the finite values.
- :func:`paired_comparison`: the per-fold differences ``model - baseline`` (both scored on the same
  test fold, after training on the same training part), their mean and sample sd, the paired
  t statistic ``mean / (sd / sqrt(n))`` with ``n - 1`` degrees of freedom, and two-sided p-values of
  the paired t-test and of the Wilcoxon signed-rank test, from scipy (the ``deepsea`` extra). Without
  scipy the p-values are ``None`` and ``p_note`` says why.

A fold whose model or baseline score is NaN (an undefined metric) is left out of that comparison
and counted. p-values of k-fold cross-validation are optimistic: the folds' training parts overlap,
so their scores are not independent (Nadeau & Bengio 2003); with 5 folds, the smallest two-sided
Wilcoxon p-value there is is 1/16 = 0.0625.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

SCIPY_MISSING = "no p-value: scipy is not installed (pip install 'bigbird_dna[deepsea]')"


def mean_sd(values: Sequence[float]) -> dict[str, float | int]:
    """``{"mean", "sd", "n"}`` of the finite ``values``: the sample sd (``ddof=1``), NaN for one value;
    both NaN for none."""
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    mean = float(finite.mean()) if len(finite) else math.nan
    sd = float(finite.std(ddof=1)) if len(finite) > 1 else math.nan
    return {"mean": mean, "sd": sd, "n": int(len(finite))}


def _scipy_stats():
    try:
        from scipy import stats
    except ImportError:
        return None
    return stats


def paired_comparison(model: Sequence[float], baseline: Sequence[float]) -> dict[str, Any]:
    """The paired comparison of ``model`` and ``baseline`` scores, one pair per fold.

    Returns:
        ``{"n", "left_out", "mean_difference", "sd_difference", "t", "p_t_test", "p_wilcoxon",
        "p_note"}``: ``n`` folds with both scores finite (``left_out`` the others); ``t`` NaN when
        every difference is the same (sd 0) or ``n < 2``; p-values ``None`` without scipy or when
        undefined, with ``p_note`` saying which.
    """
    if len(model) != len(baseline):
        raise ValueError(f"{len(model)} model scores but {len(baseline)} baseline scores; pair them by fold")
    pairs = [(m, b) for m, b in zip(model, baseline)
             if m is not None and b is not None and math.isfinite(m) and math.isfinite(b)]
    differences = np.asarray([m - b for m, b in pairs], dtype=np.float64)  # [n]
    n = len(differences)
    summary = mean_sd(differences.tolist())
    sd = summary["sd"]
    varies = n > 1 and sd > 1e-12 * max(1.0, abs(summary["mean"]))  # not equal differences up to rounding
    t = summary["mean"] / (sd / math.sqrt(n)) if varies else math.nan
    out: dict[str, Any] = {"n": n, "left_out": len(model) - n, "mean_difference": summary["mean"],
                           "sd_difference": sd, "t": t, "p_t_test": None, "p_wilcoxon": None, "p_note": None}
    stats = _scipy_stats()
    if stats is None:
        out["p_note"] = SCIPY_MISSING
        return out
    if not varies:
        out["p_note"] = ("no p-value with fewer than 2 paired folds" if n < 2
                         else "no p-value where every fold's difference is the same")
        return out
    out["p_t_test"] = float(stats.ttest_rel([m for m, _ in pairs], [b for _, b in pairs]).pvalue)
    if np.any(differences != 0):
        out["p_wilcoxon"] = float(stats.wilcoxon(differences).pvalue)
    return out
