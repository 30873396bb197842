"""The baselines ``experiment=pretrain_gpu`` is judged against, computed before any GPU run.

Composes the recipe (plus any Hydra overrides), builds its data module on the CPU, exactly as the
run will (genome, split, window, eval masking, seed, char tokenizer), and writes its
``reference_metrics``: the train unigram and the causal and bidirectional k-mer chains, in bits per
base on the val and test bases the model will be scored on. No model, no GPU.

    python benchmarks/pretrain_gpu_baselines.py [--out PATH] [overrides]   # default: the results layout
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.common.provenance import recorded_state  # noqa: E402
from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_out_argument(parser, "pretrain_gpu_baselines")
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args(argv)
    from hydra import compose, initialize_config_module

    from bigbird_dna.evaluation.reference import reference_metrics
    from bigbird_dna.tokenizer import char_tokenizer
    from bigbird_dna.training.resolvers import instantiate, register_resolvers

    register_resolvers()
    with initialize_config_module(version_base="1.3", config_module="bigbird_dna.conf"):
        cfg = compose("train", overrides=["experiment=pretrain_gpu", *args.overrides])
    with tempfile.TemporaryDirectory() as scratch:  # the data module writes its split manifest there
        data = instantiate(cfg.data, seed=cfg.seed, run_dir=scratch, is_main_process=True)
        data.attach_tokenizer(char_tokenizer(), cfg.model.max_positions)
        metrics = reference_metrics(data)
    result = {"benchmark": "pretrain_gpu_baselines", **recorded_state(),
              "command": script_command(__file__, argv), "window_bp": cfg.data.window_bp, "metrics": metrics}
    write_json(args.out or default_out("pretrain_gpu_baselines"), result)
    print(json.dumps(metrics, indent=2))
    return result


if __name__ == "__main__":
    main()
