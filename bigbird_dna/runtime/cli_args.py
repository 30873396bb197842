"""Command-line options that every inference CLI (predict, variants, score) takes the same way.

Kept free of torch so that ``--help`` stays instant; the values are resolved by
:mod:`bigbird_dna.inference.device`.
"""

from __future__ import annotations

import argparse


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    """``--device`` (auto, cpu, cuda, cuda:N), ``--precision`` (auto, fp32, bf16) and
    ``--cuda-graphs``/``--no-cuda-graphs``."""
    parser.add_argument("--device", default="auto", help="auto (GPU if any), cpu, cuda, cuda:N (default auto)")
    parser.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                        help="auto = bf16 autocast on GPU, fp32 on CPU")
    parser.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=True,
                        help="on a GPU, replay batches of a repeated shape from CUDA graphs (default: on)")
