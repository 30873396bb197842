"""What the labelled defaults' encoder carries in its residual stream over the first optimizer steps.

    python benchmarks/residual_stream.py --task promoters=DIR --seeds 5 6 [--at 0 40 80 188]
        [--override optim.lr=1e-3] [--tag NAME]

Each seed is one ``python -m bigbird_dna.train task=promoter data=promoter_labelled`` run on the
task folder's rows, subsampled as ``labelled_defaults.py`` does (6,000 / 1,000 / 2,000 by default,
seed 0), stopped after the last step of ``--at``. At each of those optimizer steps (0: before the
first) a callback (:class:`ResidualStream`) reads the first ``--rows`` validation sequences, with
dropout off and the stem's batch norm on the batch's own statistics (its running ones are put back
afterwards, so the run trains as it would have), and records, at the embedding norm, after each
BigBird layer and at the final norm (states ``[B, S, hidden]``):

- ``constant``: the norm of the states' mean over every sequence and position, the part of the
  stream that is the same everywhere;
- ``content``: the root-mean-square norm of what is left, the part that can tell sequences and
  positions apart;

and the pooled vector's across-sequence sd (median over its channels) and the network logit's sd
(the head without its composition path). A network whose final ``content`` has shrunk to a few per
cent of its ``constant`` pools nearly the same vector for every sequence: a silent network, whose
logit cannot rank anything. Positions are not masked, so the rows should have one length, as the
development tasks' windows do.

Results: ``residual_stream[-TAG].json`` in ``benchmarks/results/<date>_<machine>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import lightning as L
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402
from benchmarks.labelled_defaults import fingerprint, subsample  # noqa: E402


def stream_parts(states: torch.Tensor) -> dict[str, float]:
    """``states [B, S, H]`` -> ``{"constant": |mean over B and S|, "content": rms |states - that mean|}``."""
    constant = states.mean((0, 1))
    content = (states - constant).square().sum(-1).mean().sqrt()
    return {"constant": round(float(constant.norm()), 3), "content": round(float(content), 3)}


class ResidualStream(L.Callback):
    """At optimizer steps ``at``, append the residual stream's parts (see the module docstring) to
    ``out`` (a JSON list, rewritten each time); after the last, stop the run.

    Args:
        out: the JSON file.
        at: the optimizer steps (0: before the first).
        rows: how many validation sequences are read (the first ones).
    """

    def __init__(self, out: str, at: list[int], rows: int = 128):
        self.out, self.at, self.rows, self.records = Path(out), sorted(int(s) for s in at), rows, []
        self.batch: dict[str, torch.Tensor] | None = None

    def on_train_start(self, trainer: L.Trainer, module: L.LightningModule) -> None:
        if 0 in self.at:
            self.record(trainer, module, 0)

    def on_train_batch_end(self, trainer: L.Trainer, module: L.LightningModule, *args) -> None:
        step = trainer.global_step
        if step in self.at and step > 0:
            self.record(trainer, module, step)
        if step >= self.at[-1]:
            trainer.should_stop = True

    def validation_rows(self, trainer: L.Trainer) -> dict[str, torch.Tensor]:
        """The first ``rows`` validation sequences, read once; the global RNG is left as it was (a
        DataLoader draws its base seed from it, which would change the run's dropout masks)."""
        if self.batch is None:
            state = torch.get_rng_state()
            batches, count = [], 0
            for batch in trainer.datamodule.val_dataloader():
                batches.append(batch)
                count += batch["input_ids"].shape[0]
                if count >= self.rows:
                    break
            torch.set_rng_state(state)
            self.batch = {k: torch.cat([b[k] for b in batches])[:self.rows] for k in ("input_ids", "attention_mask")}
        return self.batch

    def record(self, trainer: L.Trainer, module: L.LightningModule, step: int) -> None:
        batch = self.validation_rows(trainer)
        encoder = module.encoder
        watched = {"embed_norm": encoder.embed_norm, **{f"layer{i}": layer for i, layer in enumerate(encoder.layers)},
                   "final_norm": encoder.final_norm}
        states: dict[str, torch.Tensor] = {}
        hooks = [m.register_forward_hook(lambda _m, _i, out, name=name: states.__setitem__(name, out.detach().float()))
                 for name, m in watched.items()]
        buffers = {name: b.clone() for name, b in module.named_buffers()}
        dropouts = [m for m in module.modules() if isinstance(m, torch.nn.Dropout) and m.training]
        for m in dropouts:
            m.eval()
        try:
            with torch.no_grad():
                device = module.device
                pooled = module.pooled(batch["input_ids"].to(device), batch["attention_mask"].to(device))
                logit = module.head.out(module.head.body(pooled))
        finally:
            for hook in hooks:
                hook.remove()
            for m in dropouts:
                m.train()
            with torch.no_grad():
                for name, b in module.named_buffers():
                    b.copy_(buffers[name])
        self.records.append({
            "step": step, "lr": trainer.optimizers[0].param_groups[0]["lr"],
            "stream": {name: stream_parts(s) for name, s in states.items()},
            "pooled_sd_median": round(float(pooled.float().std(0).median()), 4),
            "network_logit_sd": round(float(logit.float().std()), 4)})
        write_json(self.out, self.records)


def run(work: Path, task: Path, seed: int, at: list[int], rows: int, overrides: list[str]) -> list[dict]:
    """One stopped training run of seed ``seed``; its records."""
    records = work / f"records-{task.name}-seed{seed}.json"
    result = subprocess.run(
        [sys.executable, "-m", "bigbird_dna.train", "task=promoter", "data=promoter_labelled",
         f"data.train={task}/train.tsv", f"data.val={task}/val.tsv", f"data.test={task}/test.tsv",
         f"seed={seed}", f"hydra.run.dir={work / f'run-{task.name}-seed{seed}'}", "test=false",
         "data.baselines.enabled=false",
         "+callbacks.residual_stream._target_=benchmarks.residual_stream.ResidualStream",
         f"+callbacks.residual_stream.out={records}", f"+callbacks.residual_stream.at=[{','.join(map(str, at))}]",
         f"+callbacks.residual_stream.rows={rows}", *overrides],
        cwd=work, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    if result.returncode != 0:
        raise SystemExit(f"train failed on {task.name} seed {seed}:\n{result.stderr[-3000:]}")
    return json.loads(records.read_text())


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", required=True, help="NAME=DIR: a folder with train.tsv, val.tsv and test.tsv")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--at", type=int, nargs="+", default=[0, 40, 80, 188], help="optimizer steps to read")
    parser.add_argument("--rows", type=int, default=128, help="validation sequences read at each step")
    parser.add_argument("--train-rows", type=int, default=6000)
    parser.add_argument("--val-rows", type=int, default=1000)
    parser.add_argument("--test-rows", type=int, default=2000)
    parser.add_argument("--override", action="append", default=[], help="a train override, repeatable")
    parser.add_argument("--tag", default="", help="suffix of the results file")
    add_out_argument(parser, "residual_stream")
    args = parser.parse_args(argv)
    out = args.out or default_out("residual_stream" + (f"-{args.tag}" if args.tag else ""))
    name, folder = args.task.split("=", 1)
    before, runs = machine(), {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        task = work / name
        task.mkdir()
        for split, limit in (("train", args.train_rows), ("val", args.val_rows), ("test", args.test_rows)):
            subsample(Path(folder) / f"{split}.tsv", task / f"{split}.tsv", limit)
        for seed in args.seeds:
            runs[str(seed)] = run(work, task, seed, args.at, args.rows, args.override)
            final = runs[str(seed)][-1]
            print(f"seed {seed} step {final['step']}: final norm {final['stream']['final_norm']}, "
                  f"pooled sd {final['pooled_sd_median']}", flush=True)
    return write_json(out, {"benchmark": "residual_stream", "task": name, "folder": fingerprint(Path(folder)),
                            "overrides": args.override, "at": args.at, "rows": args.rows, "runs": runs,
                            "machine_before": before, "machine_after": machine(),
                            "command": script_command(__file__, argv)})


if __name__ == "__main__":
    main()
