"""CPU cost of masked-marginal scoring (``BigBirdDNA.score``) with the tiny default MLM model.

    python benchmarks/cpu_score.py [--length 510] [--batch-sizes 16 64]

Builds the tiny default encoder with its MLM head (``conf/model/tiny.yaml``, char tokens, untrained
weights: speed does not depend on them), exports it, loads it with ``BigBirdDNA.from_pretrained``
on CPU and scores one random sequence of ``--length`` bases (``--length + 2`` tokens with [CLS] and
[SEP]) on its ``+`` strand: one forward pass per token. Reports seconds per sequence and per
masked row for each batch size, in one run. Results: ``cpu_score.json`` in
``benchmarks/results/<date>_<machine>/``. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402
from bigbird_dna import BigBirdDNA  # noqa: E402
from bigbird_dna.model.config import EncoderConfig  # noqa: E402
from bigbird_dna.model.export import write_export  # noqa: E402
from bigbird_dna.model.networks import MaskedLanguageModel  # noqa: E402
from bigbird_dna.runtime.malloc import keep_freed_memory  # noqa: E402
from bigbird_dna.tokenizer.fixed import char_tokenizer  # noqa: E402


def tiny_mlm_export(folder: Path) -> Path:
    """The tiny default encoder + MLM head (seed 0, untrained) as an export in ``folder``."""
    import torch

    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    settings = yaml.safe_load((REPO / "conf" / "model" / "tiny.yaml").read_text())
    config = EncoderConfig.from_dict({**settings, "vocab_size": tokenizer.vocab_size})
    model = MaskedLanguageModel(config)
    return write_export(folder / "export", "mlm", model.state_dict(), config.to_dict(), tokenizer)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--length", type=int, default=510, help="bases scored (default 510: the whole context)")
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64])
    add_out_argument(parser, "cpu_score")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as the CLIs do
    seq = "".join(np.random.default_rng(0).choice(list("ACGT"), size=args.length))
    before = machine()
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        model = BigBirdDNA.from_pretrained(tiny_mlm_export(Path(tmp)), device="cpu")
        model.score([seq[:64]], batch_size=16, progress=False)  # warm-up
        for batch_size in args.batch_sizes:
            started = time.perf_counter()
            scores = model.score([seq], batch_size=batch_size, progress=False)
            seconds = time.perf_counter() - started
            rows = args.length  # char tokens: one masked row per base
            runs[f"batch_size={batch_size}"] = {
                "seconds": round(seconds, 2), "ms_per_masked_row": round(1e3 * seconds / rows, 2),
                "finite_bases": int(np.isfinite(scores.per_base[0].numpy()).sum())}
    result = {"benchmark": "cpu_score", "model": "tiny default (conf/model/tiny.yaml), char tokens, untrained",
              "bases": args.length, "tokens_per_row": args.length + 2, "strands": "+", "precision": "fp32",
              "runs": runs, "machine_before": before, "machine_after": machine()}
    path = write_json(args.out or default_out("cpu_score"), {**result, "command": script_command(__file__, argv)})
    print(json.dumps(runs, indent=1))
    return path


if __name__ == "__main__":
    main()
