"""Does a model find a planted 10-bp motif in real genome windows? The hybrid encoder against the tiny one.

    python benchmarks/planted_motif.py [--models tiny hybrid_tiny] [--seconds 60] [--pooling mean_max]

The data: ``bigbird_dna.demo.planted_motif`` windows of 200 bp from the bundled *H. pylori* genome,
half of them with one copy of a 10-bp motif (85% per-base consensus, random position and strand);
``--train`` train and ``--val`` val windows, from different seeds. Each model of ``--models`` (a
``conf/model/NAME.yaml``, char tokens, untrained) gets a sigmoid head (``--pooling``) and trains
with AdamW for ``--seconds`` of wall time (batches of ``--batch``, one thread per core); val AUROC
is measured every ``--eval-every`` steps. The small CNN baseline (``evaluation/baselines/cnn.py``)
trains on the same windows for reference. Results: ``planted_motif.json`` in
``benchmarks/results/<date>_<machine>/``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402
from bigbird_dna.demo.planted_motif import planted_windows  # noqa: E402
from bigbird_dna.evaluation.metrics import binary_metrics  # noqa: E402
from bigbird_dna.model.config import EncoderConfig  # noqa: E402
from bigbird_dna.model.networks import SequenceClassifier  # noqa: E402
from bigbird_dna.model.outputs import SIGMOID, ModelOutput  # noqa: E402
from bigbird_dna.tokenizer.fixed import char_tokenizer  # noqa: E402
from bigbird_dna.tokenizer.specials import encode_with_specials  # noqa: E402


def model_config(name: str, **overrides) -> EncoderConfig:
    """``conf/model/NAME.yaml`` with char tokens, plus ``overrides``."""
    settings = yaml.safe_load((REPO / "conf" / "model" / f"{name}.yaml").read_text())
    return EncoderConfig.from_dict({**settings, "vocab_size": char_tokenizer().vocab_size, **overrides})


@torch.no_grad()
def val_auroc(net: SequenceClassifier, ids: torch.Tensor, labels: torch.Tensor, batch: int = 256) -> float:
    net.eval()
    probs = torch.cat([net.predict_proba(ids[i:i + batch], None)[:, 0] for i in range(0, len(ids), batch)])
    net.train()
    return binary_metrics(probs, labels)["auroc"]


def train_classifier(config: EncoderConfig, train: tuple[list[str], list[int]], val: tuple[list[str], list[int]],
                     seconds: float, pooling: str = "mean_max", batch: int = 32, lr: float = 1e-3,
                     eval_every: int = 50, seed: int = 0, max_steps: int | None = None) -> dict:
    """Train a one-label sigmoid classifier of ``config`` on ``train`` for ``seconds`` of wall time
    (or ``max_steps`` steps, whichever comes first).

    Every window has one length, so no row is padded (``attention_mask`` None). ``seconds`` counts
    training steps only (not the val passes). Returns the steps, training seconds, the val AUROC curve
    ``[(step, training seconds, auroc)]`` and the last and best val AUROC.
    """
    torch.manual_seed(seed)
    tokenizer = char_tokenizer()
    net = SequenceClassifier(config, ModelOutput(SIGMOID, ("motif",)), head={"dropout": 0.1, "pooling": pooling})
    ids, _, _ = encode_with_specials(tokenizer, train[0], config.max_input_tokens)
    val_ids, _, _ = encode_with_specials(tokenizer, val[0], config.max_input_tokens)
    labels, val_labels = torch.tensor(train[1], dtype=torch.float32), torch.tensor(val[1])
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=0.01)
    generator = torch.Generator().manual_seed(seed)
    net.train()
    curve, step, trained = [], 0, 0.0
    while trained < seconds and (max_steps is None or step < max_steps):
        started = time.perf_counter()
        rows = torch.randint(len(ids), (batch,), generator=generator)
        loss = net.output.kind.loss(net(ids[rows], None), labels[rows, None])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        trained += time.perf_counter() - started
        step += 1
        if step % eval_every == 0:
            curve.append((step, round(trained, 1), round(val_auroc(net, val_ids, val_labels), 4)))
    final = val_auroc(net, val_ids, val_labels)
    return {"steps": step, "train_seconds": round(trained, 1), "final_val_auroc": round(final, 4),
            "best_val_auroc": max([final] + [a for _, _, a in curve]), "curve": curve,
            "parameters": sum(p.numel() for p in net.parameters())}


def cnn_baseline(train: tuple[list[str], list[int]], val: tuple[list[str], list[int]], seconds: float) -> dict:
    """The small CNN baseline on the same windows: val AUROC (both strands)."""
    from bigbird_dna.data.labelled import LabelledSequences
    from bigbird_dna.evaluation.baselines.cnn import predict_cnn, train_cnn
    from bigbird_dna.evaluation.baselines.sequences import coded_split

    coded = [coded_split(LabelledSequences(seqs, np.array(labels, dtype=np.float32)), None, 0)
             for seqs, labels in (train, val)]
    started = time.perf_counter()
    result = train_cnn(coded[0], coded[1], "binary", max_seconds=seconds)
    probs = predict_cnn(result.model, coded[1], "binary", torch.device("cpu"))[:, 0]
    return {"epochs": result.epochs, "seconds": round(time.perf_counter() - started, 1),
            "val_auroc": round(binary_metrics(probs, torch.tensor(val[1]))["auroc"], 4)}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["tiny", "hybrid_tiny"])
    parser.add_argument("--seconds", type=float, default=60.0, help="training wall time per model")
    parser.add_argument("--pooling", default="mean_max", help="the classifier head's pooling")
    parser.add_argument("--train", type=int, default=4000)
    parser.add_argument("--val", type=int, default=1000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cnn", action="store_true", help="skip the CNN baseline")
    add_out_argument(parser, "planted_motif")
    args = parser.parse_args(argv)
    genome = REPO / "sample_data" / "h_pylori_F32.fa"
    train = planted_windows(genome, args.train, seed=args.seed)
    val = planted_windows(genome, args.val, seed=args.seed + 1)
    before = machine()
    runs = {name: train_classifier(model_config(name), train, val, args.seconds, args.pooling, args.batch,
                                   eval_every=args.eval_every, seed=args.seed) for name in args.models}
    for name, run in runs.items():
        print(f"{name}: {run['steps']} steps in {run['train_seconds']} s, val AUROC {run['final_val_auroc']} "
              f"(best {run['best_val_auroc']})")
    result = {"benchmark": "planted_motif", "genome": "sample_data/h_pylori_F32.fa", "window_bp": 200,
              "motif_bp": 10, "consensus": 0.85, "train": args.train, "val": args.val, "pooling": args.pooling,
              "batch": args.batch, "seconds_per_model": args.seconds, "runs": runs}
    if not args.no_cnn:
        result["cnn_baseline"] = cnn_baseline(train, val, args.seconds)
        print(f"CNN baseline: val AUROC {result['cnn_baseline']['val_auroc']}")
    result.update(machine_before=before, machine_after=machine(), command=script_command(__file__, argv))
    return write_json(args.out or default_out("planted_motif"), result)


if __name__ == "__main__":
    main()
