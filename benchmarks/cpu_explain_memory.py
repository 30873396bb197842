"""Memory and time of an attribution track over 100 kbp and 1 Mbp on CPU: the track must stream.

    python benchmarks/cpu_explain_memory.py [--method gradient_x_input] [--lengths 100000 1000000]

Builds the tiny default encoder (``conf/model/tiny.yaml``, char tokens) with a one-output
classification head (untrained: cost and memory do not depend on the weights), exports it, and
runs ``python -m bigbird_dna.explain`` in a fresh process for each length: a ``--region`` of that
many bases of the bundled *H. pylori* genome, written as a bedGraph track at the model's 510-bp
window. Each run's peak resident memory (the child's ``ru_maxrss``) and wall time are recorded, and
the ratio of the longest run's peak to the shortest's: bounded memory means about 1. Results:
``cpu_explain_memory.json`` in ``benchmarks/results/<date>_<machine>/``. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402

GENOME = REPO / "sample_data" / "h_pylori_F32.fa"


def tiny_classifier_export(folder: Path) -> Path:
    """The tiny default encoder + a one-output head (seed 0, untrained) as an export in ``folder``."""
    import torch

    from bigbird_dna.hf import write_hf_export
    from bigbird_dna.model.config import EncoderConfig
    from bigbird_dna.model.networks import SequenceClassifier
    from bigbird_dna.model.outputs import SIGMOID, ModelOutput
    from bigbird_dna.tokenizer.fixed import char_tokenizer

    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    settings = yaml.safe_load((REPO / "conf" / "model" / "tiny.yaml").read_text())
    config = EncoderConfig.from_dict({**settings, "vocab_size": tokenizer.vocab_size})
    output = ModelOutput(SIGMOID, ("promoter",))
    model = SequenceClassifier(config, output, {"dropout": 0.0})
    return write_hf_export(folder / "export", "promoter", model.state_dict(), config.to_dict(), tokenizer, output,
                           {"head": {"dropout": 0.0}, "predict_window_bp": config.max_positions - 2})


# The child reports its own peak: ru_maxrss of RUSAGE_CHILDREN is a maximum over every child so far.
CHILD = ("import resource, runpy, sys; sys.argv[0] = 'explain'; runpy.run_module('bigbird_dna.explain', "
         "run_name='__main__'); print('peak_kib', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)")


def run_one(export: Path, length: int, method: str, out: Path) -> dict:
    """One explain process over ``length`` bases; its peak RSS (MiB), seconds and track lines."""
    started = time.perf_counter()
    command = [sys.executable, "-c", CHILD, "--model", str(export), str(GENOME), "--region",
               f"{_record()}:1-{length}", "--method", method, "--out", str(out), "--device", "cpu", "--no-progress"]
    result = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - started
    if result.returncode != 0:
        raise SystemExit(result.stderr[-2000:])
    peak = int(result.stderr.rsplit("peak_kib", 1)[1].split()[0])
    lines = sum(1 for _ in open(out)) - 1
    return {"bases": length, "seconds": round(seconds, 1), "peak_rss_mib": round(peak / 1024, 1),
            "track_bases": lines, "kbp_per_second": round(length / 1e3 / seconds, 2)}


def _record() -> str:
    with open(GENOME) as handle:
        return handle.readline()[1:].split()[0]


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", default="gradient_x_input", choices=("gradient_x_input", "integrated_gradients"))
    parser.add_argument("--lengths", type=int, nargs="+", default=[100_000, 1_000_000])
    add_out_argument(parser, "cpu_explain_memory")
    args = parser.parse_args(argv)
    before = machine()
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        export = tiny_classifier_export(Path(tmp))
        for length in sorted(args.lengths):
            runs.append(run_one(export, length, args.method, Path(tmp) / f"track_{length}.bedGraph"))
            print(json.dumps(runs[-1]), flush=True)
    ratio = runs[-1]["peak_rss_mib"] / runs[0]["peak_rss_mib"]
    result = {"benchmark": "cpu_explain_memory", "method": args.method,
              "model": "tiny default (conf/model/tiny.yaml), char tokens, one-output head, untrained",
              "window_bp": 510, "runs": runs, "peak_rss_ratio_longest_to_shortest": round(ratio, 3),
              "machine_before": before, "machine_after": machine()}
    return write_json(args.out or default_out("cpu_explain_memory"),
                      {**result, "command": script_command(__file__, argv)})


if __name__ == "__main__":
    main()
