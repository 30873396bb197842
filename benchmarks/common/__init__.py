"""What the benchmark scripts share; the scripts themselves are ``benchmarks/*.py``.

- ``harness``: first-call timing, peak memory, relative errors, the machine record;
- ``timing``: repeated timing and its statistics; ``mfu``: model FLOPs utilisation;
- ``provenance``: the commit and dirty flag a result was measured at;
- ``results``: where a result file goes (``benchmarks/results/<date>_<machine>/``) and the
  command recorded in it;
- ``attention_measure``, ``attention_baselines``: the gates, timings and baselines of
  ``attention.py``; ``train_report``: the ratios and table of ``train_throughput.py``;
  ``pretrain_curve_render``: the text and figure of ``pretrain_curve.py``;
- ``targets``, ``gpu_suite_report``: the GPU suite's target table, machine record and merge.

Entry points put the repository root on ``sys.path`` and import these as ``benchmarks.common.X``;
``gpu_suite.sh`` runs ``provenance`` and ``gpu_suite_report`` with ``python -m`` from the root.
"""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
