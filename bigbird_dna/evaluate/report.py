"""The evaluation's report: mean ± sd over folds (or seeds) of every model's test metrics, the paired
comparison of the model with each baseline, published results in the same metric, and every
fold's numbers; as a dict (``results.json``) and as Markdown (``results.md``).

Report dict keys: ``dataset`` (name, layout, source, classes, counts, positive class), ``protocol``
(mode, folds or seeds, seed, validation rule, what was pooled or set aside), ``label_kind``,
``metrics`` (``[metric, label]``), ``models`` (``{key: name}``), ``splits`` (one entry per fold or seed
with ``metrics: {model: {metric: value}}``), ``summary`` (``{model: {metric: {mean, sd, n}}}``),
``paired`` (``{baseline: {metric: paired_comparison}}``, model minus baseline), ``published``
(``[{source, benchmark, protocol, metric, unit, scores, ours}]``), ``overrides``, ``seconds``. A
metric that is undefined is ``null`` in the JSON.
"""

from __future__ import annotations

import json
import math
from typing import Any

from bigbird_dna.evaluate.inputs import LabelledPool
from bigbird_dna.evaluate.runs import METRICS, MODELS, TASKS
from bigbird_dna.evaluation.paired import mean_sd, paired_comparison
from bigbird_dna.evaluation.published import published_results


def aggregate(splits: list[dict[str, Any]], kind: str) -> tuple[dict, dict]:
    """``(summary, paired)`` of the per-split metrics (see the module docstring)."""
    def values(model: str, metric: str) -> list[float]:
        return [split["metrics"][model][metric] for split in splits]

    summary = {model: {m[0]: mean_sd(values(model, m[0])) for m in METRICS[kind]} for model, _ in MODELS}
    paired = {baseline: {m[0]: paired_comparison(values("model", m[0]), values(baseline, m[0]))
                         for m in METRICS[kind]} for baseline, _ in MODELS[1:]}
    return summary, paired


def published_rows(name: str, kind: str, summary: dict) -> list[dict[str, Any]]:
    """The published results for dataset ``name``, each with ours in its metric and unit (``ours``:
    ``{model: {mean, sd, n}}``); a published F1 of a multiclass task is set beside our macro F1."""
    ours_keys = {m[0] for m in METRICS[kind]}
    rows = []
    for result in published_results(name):
        metric = result.metric if result.metric in ours_keys else f"macro_{result.metric}"
        scale = 100.0 if result.unit == "%" else 1.0
        ours = {model: {k: (v * scale if k != "n" else v) for k, v in summary[model][metric].items()}
                for model, _ in MODELS} if metric in ours_keys else {}
        rows.append({"source": result.source, "benchmark": result.benchmark, "dataset": result.dataset,
                     "protocol": result.protocol, "metric": result.metric, "our_metric": metric,
                     "unit": result.unit, "scores": dict(result.scores), "ours": ours})
    return rows


def build_report(pool: LabelledPool, plan: dict[str, Any], splits: list[dict[str, Any]], overrides: list[str],
                 seconds: float) -> dict[str, Any]:
    """The report dict (see the module docstring) of ``splits``, the results of
    :func:`~bigbird_dna.evaluate.runs.run_split` for every run of ``plan``."""
    summary, paired = aggregate(splits, pool.label_kind)
    dataset = {"name": pool.name, "data": pool.data, "layout": pool.layout, "source": pool.source,
               "class_names": pool.class_names, "counts": pool.counts(plan["pooled"]),
               "positive_class": pool.class_names[1] if pool.label_kind == "binary" else None}
    return {"dataset": dataset, "protocol": {k: v for k, v in plan.items() if k not in ("splits", "pooled")},
            "label_kind": pool.label_kind, "task": TASKS[pool.label_kind], "overrides": overrides,
            "metrics": [[m[0], m[1]] for m in METRICS[pool.label_kind]], "models": dict(MODELS),
            "splits": splits, "summary": summary, "paired": paired,
            "published": published_rows(pool.name, pool.label_kind, summary), "seconds": round(seconds, 1)}


def _number(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def _mean_sd(entry: dict, digits: int = 3) -> str:
    if not math.isfinite(entry["mean"]):
        return "n/a"
    sd = f" ± {entry['sd']:.{digits}f}" if math.isfinite(entry["sd"]) else ""
    return f"{entry['mean']:.{digits}f}{sd}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(row) + " |" for row in rows)]


def markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: header lines, the mean ± sd table, the paired comparison, the
    published results (when the dataset has some) and the per-split table."""
    kind, models = report["label_kind"], report["models"]
    metrics = METRICS[kind]
    protocol, dataset = report["protocol"], report["dataset"]
    n = len(report["splits"])
    over = f"{n} folds" if protocol["mode"] == "kfold" else f"{n} seeds"
    counts = ", ".join(f"{c} {k}" for c, k in dataset["counts"].items())
    lines = [f"# Evaluation of {dataset['name']}", "",
             f"- data: {dataset['data']} ({dataset['layout']}); {len(dataset['class_names'])} classes ({counts})"
             + (f"; positive class (AUPRC, F1): {dataset['positive_class']}" if dataset["positive_class"] else ""),
             f"- protocol: {protocol['description']}",
             f"- validation: {protocol['validation']}",
             f"- model: {' '.join(report['task'])}" + (f", overrides: {' '.join(report['overrides'])}"
                                                       if report["overrides"] else ""),
             f"- test metrics of each held-out {'fold' if protocol['mode'] == 'kfold' else 'test split'}; "
             f"mean ± sd (sample sd) over {over}", ""]
    lines += _table(["model", *(label for _, label, _, _ in metrics)],
                    [[models[m], *(_mean_sd(report["summary"][m][metric]) for metric, *_ in metrics)] for m in models])
    lines += ["", f"## Paired comparison: {models['model']} minus each baseline, {over}", ""]
    rows = []
    for baseline, by_metric in report["paired"].items():
        for metric, label, *_ in metrics:
            c = by_metric[metric]
            rows.append([label, models[baseline], _number(c["mean_difference"], 4), _number(c["sd_difference"], 4),
                         _number(c["t"], 2), _p(c["p_t_test"]), _p(c["p_wilcoxon"]), str(c["n"])])
    lines += _table(["metric", "baseline", "mean difference", "sd", "t", "paired t-test p", "Wilcoxon p", "pairs"],
                    rows)
    notes = sorted({c["p_note"] for by in report["paired"].values() for c in by.values() if c["p_note"]})
    lines += ["", "A positive difference means the model scored higher. Two-sided p-values; cross-validation "
                  "folds share training data, so their p-values are optimistic."] + [f"Note: {n_}." for n_ in notes]
    if report["published"]:
        lines += ["", "## Published results (their protocol and metric; ours beside them in the same metric)", ""]
        rows = []
        for row in report["published"]:
            digits = 1 if row["unit"] == "%" else 3
            unit = " (%)" if row["unit"] == "%" else ""
            theirs = ", ".join(f"{k} {v:.{digits}f}" for k, v in row["scores"].items())
            ours = ", ".join(f"{models[m]} {_mean_sd(v, digits)}" for m, v in row["ours"].items()) or "n/a"
            rows.append([row["source"], row["protocol"], f"{row['metric']}{unit}", theirs, f"{ours} ({over})"])
        lines += _table(["source", "protocol", "metric", "published", "ours"], rows)
    lines += ["", "## Per split", ""]
    rows = [[s["name"], str(s["seed"]), " / ".join(str(s["sizes"][p]) for p in ("train", "val", "test")),
             models[m], *(_number(s["metrics"][m][metric]) for metric, *_ in metrics)]
            for s in report["splits"] for m in models]
    lines += _table(["split", "seed", "train / val / test", "model", *(label for _, label, _, _ in metrics)], rows)
    return "\n".join(lines) + "\n"


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinity replaced by None (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def to_json(report: dict[str, Any]) -> str:
    """The report as strict JSON (NaN as null)."""
    return json.dumps(_finite(report), indent=2) + "\n"
