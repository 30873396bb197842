"""Chromatin-profile evaluation: strand averaging, per-label AUROC/AUPRC, group medians, and the
per-label TSV and PNG written to the run directory.

DeepSEA's convention is the **median** AUC per label group (DHS ``[0, 125)``, TF ``[125, 815)``,
HM ``[815, 919)`` for the 919 DeepSEA labels; any ranges for other label sets). A label with no
positive (or no negative) sample in the evaluated split has no AUC: it is excluded from every
median and counted, and written as ``NA`` in the TSV.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from torchmetrics.functional.classification import binary_roc

from bigbird_dna.errors import InputError
from bigbird_dna.evaluation.metrics import LabelMetrics, median_of
from bigbird_dna.runtime.atomic import atomic_file, write_text_atomic


def parse_groups(groups: list | dict | None, num_labels: int) -> dict[str, tuple[int, int]]:
    """Label ranges ``[start, end)`` by group name, checked against ``num_labels``.

    Args:
        groups: ``[[name, start, end], ...]`` (the config's form: a Hydra override replaces the
            whole list) or ``{name: [start, end]}``; ``None`` = one group ``all``.
    """
    if not groups:
        return {"all": (0, num_labels)}
    entries = [(name, *bounds) for name, bounds in groups.items()] if isinstance(groups, dict) else groups
    parsed = {}
    for entry in entries:
        if len(entry) != 3 or not 0 <= int(entry[1]) < int(entry[2]) <= num_labels:
            raise InputError(f"task.groups entry {list(entry)} is not [name, start, end] with 0 <= start < end <= "
                             f"{num_labels} (task.num_labels). Fix task.groups for this label set, e.g. "
                             "task.groups=[[DHS,0,125],[TF,125,815],[HM,815,919]].")
        parsed[str(entry[0])] = (int(entry[1]), int(entry[2]))
    return parsed


def average_strands(probs: torch.Tensor, targets: torch.Tensor, indices: torch.Tensor,
                    pairs: np.ndarray | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Put evaluated rows back in file order and average each forward/reverse-complement pair.

    Args:
        probs, targets: ``[N, C]`` in the order the rows were evaluated (any order; rows padded in by
            a distributed sampler repeat an index and are dropped).
        indices: ``[N]`` file row of each evaluated row.
        pairs: ``[P, 2]`` file rows (forward, reverse complement), or ``None``/empty for no pairs.

    Returns:
        ``(probs [M, C], targets [M, C])``, one row per window: a pair whose two rows were both
        evaluated becomes their mean probability (targets of the forward row); other rows stay.
    """
    unique, first = np.unique(indices.numpy(), return_index=True)
    probs, targets = probs[torch.from_numpy(first)], targets[torch.from_numpy(first)]  # sorted by file row
    if pairs is None or not len(pairs):
        return probs, targets
    position = {int(row): i for i, row in enumerate(unique)}
    both = [(position[f], position[r]) for f, r in pairs if f in position and r in position]
    if not both:
        return probs, targets
    fwd, rev = (torch.tensor(side) for side in zip(*both))
    keep = torch.ones(len(unique), dtype=torch.bool)
    keep[rev] = False
    averaged = probs.clone()
    averaged[fwd] = (probs[fwd] + probs[rev]) / 2
    return averaged[keep], targets[keep]


def summarise(metrics: LabelMetrics, groups: dict[str, tuple[int, int]]) -> dict[str, float]:
    """Medians of the scored labels, overall and per group, plus the counts of excluded labels.

    Keys: ``auroc_median``, ``auprc_median``, ``auroc_<group>``, ``auprc_<group>`` (group names
    lower-cased), ``labels_scored``, ``labels_no_positives``, ``labels_no_negatives``.
    """
    summary = {"auroc_median": median_of(metrics.auroc), "auprc_median": median_of(metrics.auprc)}
    for name, (lo, hi) in groups.items():
        summary[f"auroc_{name.lower()}"] = median_of(metrics.auroc[lo:hi])
        summary[f"auprc_{name.lower()}"] = median_of(metrics.auprc[lo:hi])
    summary["labels_scored"] = float(metrics.scored.sum())
    summary["labels_no_positives"] = float((metrics.positives == 0).sum())
    summary["labels_no_negatives"] = float(((metrics.negatives == 0) & (metrics.positives > 0)).sum())
    return summary


def _group_of(groups: dict[str, tuple[int, int]], num_labels: int) -> list[str]:
    owner = ["-"] * num_labels
    for name, (lo, hi) in groups.items():
        for label in range(lo, hi):
            owner[label] = name if owner[label] == "-" else f"{owner[label]},{name}"
    return owner


def write_label_tsv(path: str | os.PathLike, metrics: LabelMetrics, groups: dict[str, tuple[int, int]],
                    names: list[str] | None = None) -> Path:
    """One row per label: ``label name group positives negatives auroc auprc`` (``NA`` if excluded).
    Written atomically."""
    path = Path(path)
    owner = _group_of(groups, len(metrics.auroc))
    fmt = lambda v: "NA" if np.isnan(v) else f"{v:.6f}"  # noqa: E731
    lines = ["label\tname\tgroup\tpositives\tnegatives\tauroc\tauprc"]
    for j in range(len(metrics.auroc)):
        name = names[j] if names else f"label_{j}"
        lines.append(f"{j}\t{name}\t{owner[j]}\t{metrics.positives[j]}\t{metrics.negatives[j]}\t"
                     f"{fmt(metrics.auroc[j])}\t{fmt(metrics.auprc[j])}")
    return write_text_atomic(path, "\n".join(lines) + "\n")


def plot_report(path: str | os.PathLike, metrics: LabelMetrics, probs: torch.Tensor, targets: torch.Tensor,
                groups: dict[str, tuple[int, int]], title: str = "") -> Path:
    """PNG: per-group AUROC distributions (box + points) and, per group, the ROC curve of the label
    whose AUROC is closest to the group median. Drawn with the Agg canvas (no display, no global
    backend switch); written atomically."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = Path(path)
    figure = Figure(figsize=(11, 4.5), layout="constrained")
    FigureCanvasAgg(figure)
    box, roc = figure.subplots(1, 2)
    values = [metrics.auroc[lo:hi][~np.isnan(metrics.auroc[lo:hi])] for lo, hi in groups.values()]
    labels = [f"{name}\n(n={len(v)}, median {np.median(v):.3f})" if len(v) else f"{name}\n(no scored labels)"
              for name, v in zip(groups, values)]
    box.boxplot([v if len(v) else [np.nan] for v in values], showfliers=False)
    box.set_xticks(range(1, len(labels) + 1), labels)
    rng = np.random.default_rng(0)
    for k, v in enumerate(values, start=1):
        box.scatter(k + rng.uniform(-0.15, 0.15, len(v)), v, s=6, alpha=0.4)
    box.set_ylabel("AUROC per label")
    box.set_title("AUROC by label group")
    roc.plot([0, 1], [0, 1], linestyle=":", color="grey")
    for (name, (lo, hi)), v in zip(groups.items(), values):
        if not len(v):
            continue
        span = metrics.auroc[lo:hi]
        label = lo + int(np.nanargmin(np.abs(span - np.median(v))))
        fpr, tpr, _ = binary_roc(probs[:, label].float(), targets[:, label].long())
        roc.plot(fpr.numpy(), tpr.numpy(), label=f"{name}: label {label} (AUROC {metrics.auroc[label]:.3f})")
    roc.set_xlabel("false positive rate")
    roc.set_ylabel("true positive rate")
    roc.set_title("ROC of each group's median label")
    roc.legend(loc="lower right", fontsize=8)
    if title:
        figure.suptitle(title)
    with atomic_file(path, "wb") as handle:
        figure.savefig(handle, format="png", dpi=100)
    return path
