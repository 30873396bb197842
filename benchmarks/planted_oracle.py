"""The best AUROC a planted-presence task allows: a likelihood-ratio oracle that knows the planted matrix.

    python benchmarks/planted_oracle.py presence_folder [--orders 0 2 4]

The folder is what ``python -m bigbird_dna.motifs plant --rule presence`` writes (``train.tsv``,
``test.tsv``, ``manifest.json``). Each positive is a background window with one instance of each
planted motif sampled from its JASPAR matrix on a random strand at a random place; each negative
is an unplanted window. For one motif of length ``L`` the likelihood ratio of a test sequence
``x`` is the mean over places ``p`` and both strands of ``P_motif(x[p:p+L]) / P_background(x[p:p+L])``,
with the background an order-``m`` Markov chain fitted on the train negatives (context taken
from the sequence itself). Its test AUROC is what no model can beat on average; a model or
baseline short of it has room to learn. Several motifs: the log-ratios add (one instance of each).

Results: ``planted_oracle.json`` in ``benchmarks/results/<date>_<machine>/``.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402

CODE = np.full(256, 4, dtype=np.int64)
CODE[np.frombuffer(b"ACGT", np.uint8)] = np.arange(4)


def read_split(path: Path) -> tuple[list[np.ndarray], np.ndarray]:
    """A task TSV -> (codes ``int64 [L]`` per sequence, A=0..T=3, other 4; labels ``[N]``)."""
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    seqs = [CODE[np.frombuffer(row["sequence"].upper().encode(), np.uint8)] for row in rows]
    return seqs, np.array([int(row["label"]) for row in rows])


def background_log_probs(seqs: list[np.ndarray], order: int) -> np.ndarray:
    """Order-``m`` Markov chain of ``seqs`` (add-one): ``log P(base | previous m)``, ``[4**m, 4]``."""
    counts = np.ones((4 ** order, 4))
    for x in seqs:
        context, ok = context_index(x, order)
        np.add.at(counts, (context[ok], x[order:][ok]), 1)
    return np.log(counts / counts.sum(1, keepdims=True))


def context_index(x: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    """For positions ``order..L-1``: the index of the previous ``order`` bases and whether all of
    them and the base itself are A, C, G or T."""
    n = len(x) - order
    index, ok = np.zeros(n, np.int64), x[order:] < 4
    for j in range(order):
        index = index * 4 + np.minimum(x[j:j + n], 3)
        ok &= x[j:j + n] < 4
    return index, ok


def log_ratio(x: np.ndarray, log_pfm: np.ndarray, log_background: np.ndarray, order: int) -> float:
    """log of the mean over places and strands of ``P_motif / P_background`` for one motif."""
    length = len(log_pfm)
    per_base = np.full(len(x), np.log(0.25))
    context, ok = context_index(x, order)
    per_base[order:] = np.where(ok, log_background[context, np.minimum(x[order:], 3)], np.log(0.25))
    cumulative = np.concatenate([[0.0], np.cumsum(per_base)])
    places = len(x) - length + 1
    windows = np.minimum(x[np.arange(places)[:, None] + np.arange(length)], 3)  # [places, L]
    background = cumulative[length:length + places] - cumulative[:places]
    terms = [log_pfm[np.arange(length), windows].sum(1) - background for log_pfm in (log_pfm, log_pfm[::-1, ::-1])]
    terms = np.concatenate(terms)
    top = terms.max()
    return float(top + np.log(np.exp(terms - top).mean()))


def main(argv: list[str] | None = None) -> None:
    from sklearn.metrics import roc_auc_score

    from bigbird_dna.motifs.jaspar import fetch_motif

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--orders", type=int, nargs="+", default=[0, 2, 4])
    add_out_argument(parser, "planted_oracle")
    args = parser.parse_args(argv)
    manifest = json.loads((args.folder / "manifest.json").read_text())
    if manifest.get("rule") != "presence":
        raise SystemExit(f"error: {args.folder} holds a {manifest.get('rule')!r} task; the oracle scores presence "
                         "tasks (python -m bigbird_dna.motifs plant --rule presence).")
    log_pfms = [np.log(np.clip(fetch_motif(m["id"]).pfm, 1e-4, None)) for m in manifest["motifs"]]
    train, train_labels = read_split(args.folder / "train.tsv")
    test, test_labels = read_split(args.folder / "test.tsv")
    negatives = [x for x, y in zip(train, train_labels) if y == 0]
    aurocs = {}
    for order in args.orders:
        log_background = background_log_probs(negatives, order)
        scores = [sum(log_ratio(x, pfm, log_background, order) for pfm in log_pfms) for x in test]
        aurocs[f"order_{order}"] = round(float(roc_auc_score(test_labels, scores)), 4)
        print(f"background of order {order}: oracle test AUROC {aurocs[f'order_{order}']}", flush=True)
    env = machine()
    report = {"benchmark": "planted_oracle", "folder": args.folder.name,
              "motifs": [m["id"] for m in manifest["motifs"]], "test_rows": len(test),
              "test_auroc": aurocs, "command": script_command(__file__, argv), "environment": env}
    print(f"wrote {write_json(args.out or default_out('planted_oracle', env), report)}")


if __name__ == "__main__":
    main()
