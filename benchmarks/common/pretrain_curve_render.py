"""The text and figure of ``pretrain_curve.py``: where a run stands, in a few lines, and its
learning curve with the baselines as horizontal lines (PNG, needs matplotlib)."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

BASELINES = ("unigram", "markov_causal", "markov_bidirectional")
LABELS = {"unigram": "train unigram", "markov_causal": "causal k-mer", "markov_bidirectional": "bidirectional k-mer"}
EXITS = {
    0: "finished (or nothing left to train)",
    75: "stopped on time at a step boundary, checkpoint saved",
    143: "ended by SIGTERM before the trainer could catch it (still starting up?): nothing saved",
    137: "killed (SIGKILL) after the SIGTERM: resumes from the last checkpoint",
    2: "bad input or a refused override (see the error line)",
    3: "NaN/inf training loss: stopped before the update",
    130: "interrupted",
}


def _versus(model: float, baseline: float) -> str:
    return f"beats it by {baseline - model:.4f}" if model < baseline else f"does NOT beat it ({model - baseline:+.4f})"


def status_lines(rep: dict[str, Any], exit_code: int | None = None) -> list[str]:
    """Where the run stands, for the last lines of a call."""
    lines = [f"== pretrain status: {rep['run_dir']}"]
    calls = rep["calls"]
    if calls:
        call = calls[-1]
        code = call["exit"] if exit_code is None else exit_code
        speed = ""
        if "steps_per_s" in call:
            speed = (f", steps {call['first_step']}-{call['last_step']} at {call['steps_per_s']:.2f} steps/s"
                     + (f" = {call['tokens_per_s'] / 1e3:.0f}k tokens/s" if call.get("tokens_per_s") else ""))
        lines.append(f"call {call['call']} ({call['resumed']}, {call['device']}): exit {code}, "
                     f"{EXITS.get(code, 'failed: see the error above')}; {call['seconds']} s{speed}")
    step, total = rep["global_step"], rep["max_steps"]
    if step is None:
        lines.append("no checkpoint yet")
    else:
        share = f" ({100 * step / total:.0f}%)" if total else ""
        lines.append(f"step {step} of {total}{share}: {rep['status']}")
    base = (rep["baselines"] or {}).get("val")
    if rep["curve"]:
        latest, best = rep["curve"][-1], rep["best"]
        lines.append(f"val bits/base at [MASK]: {latest['val_bits_per_base']:.4f} at step {latest['step']}; "
                     f"best {best['val_bits_per_base']:.4f} at step {best['step']}")
        if base:
            orders = rep["baselines"]
            lines.append(f"same val bases: bidirectional k-mer (k={orders.get('markov_bidirectional_order')}) "
                         f"{base['markov_bidirectional']:.4f}, causal k-mer (k={orders.get('markov_causal_order')}) "
                         f"{base['markov_causal']:.4f}, train unigram {base['unigram']:.4f}")
            versus = _versus(best["val_bits_per_base"], base["markov_bidirectional"])
            lines.append(f"best vs bidirectional k-mer: {versus}")
    else:
        lines.append("no validation yet")
    final = rep["final"]
    if final and "val/bits_per_base" in final:
        test = final.get("test/bits_per_base")
        test_base = ((rep["baselines"] or {}).get("test") or {}).get("markov_bidirectional")
        lines.append(f"final (best checkpoint): val {final['val/bits_per_base']:.4f}"
                     + (f", test {test:.4f}" if test is not None else "")
                     + (f" (test bidirectional k-mer {test_base:.4f})" if test_base is not None else ""))
    if rep["status"] == "finished":
        lines.append(f"next: nothing to train; the export is {Path(rep['run_dir']) / 'export'}")
    elif calls and calls[-1].get("steps_per_s") and step is not None and total:
        left = (total - step) / calls[-1]["steps_per_s"]
        lines.append(f"next: call again; about {left / 60:.1f} min of training left at this call's speed")
    else:
        lines.append("next: call again")
    return lines


def plot(rep: dict[str, Any], png: Path) -> bool:
    """The curve and its baselines; False when matplotlib is missing or there is nothing to plot."""
    if not rep["curve"]:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no PNG: matplotlib is not installed)", file=sys.stderr)
        return False
    steps = [p["step"] for p in rep["curve"]]
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.plot(steps, [p["val_bits_per_base"] for p in rep["curve"]], "o-", color="C0", label="model, val at [MASK]")
    train = [(p["step"], p["train_loss"] / math.log(2)) for p in rep["curve"] if p["train_loss"] is not None]
    if train:
        ax.plot(*zip(*train), "-", color="0.6", lw=1,
                label="train loss in bits/token (all selected tokens, 80/10/10)")
    base = (rep["baselines"] or {}).get("val") or {}
    for name, style in zip(BASELINES, (":", "--", "-.")):
        if base.get(name) is not None:
            order = rep["baselines"].get(f"{name}_order")
            ax.axhline(base[name], ls=style, color="C3" if name == "markov_bidirectional" else "0.3", lw=1,
                       label=f"{LABELS[name]}{f' (k={order})' if order is not None else ''}: {base[name]:.4f}")
    if rep["best"]:
        ax.plot([rep["best"]["step"]], [rep["best"]["val_bits_per_base"]], "*", ms=12, color="C1",
                label=f"best: {rep['best']['val_bits_per_base']:.4f} at step {rep['best']['step']}")
    model = rep["config"]["model"]
    ax.set_title(f"{model.get('num_layers')} x {model.get('hidden_size')} BigBird, "
                 f"{rep['config']['data'].get('window_bp')} bp windows: step {rep['global_step']} of "
                 f"{rep['max_steps']} ({rep['status']})", fontsize=10)
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("bits per base")
    # below the axes: inside, it covered the baselines' lines at the top of the plot
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=120)
    plt.close(fig)
    return True
