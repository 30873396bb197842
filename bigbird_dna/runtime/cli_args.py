"""What every command line of the package shares: a parser whose help is the module's docstring,
the device options of the inference CLIs (predict, embed, variants, score), and their entry point.

Kept free of torch so that ``--help`` stays instant; the values are resolved by
:mod:`bigbird_dna.inference.device`.
"""

from __future__ import annotations

import argparse
import os
from typing import Callable

from bigbird_dna.errors import plain_help
from bigbird_dna.version import __version__


def parser_from_doc(prog: str, doc: str) -> argparse.ArgumentParser:
    """A parser whose ``--help`` is the module docstring ``doc`` (markup removed): its first paragraph
    as the description, the rest as the epilog; with ``--version``."""
    description, _, epilog = plain_help(doc).partition("\n\n")
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog or None,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    return parser


def run_inference_cli(main: Callable[[], object]) -> None:
    """The console-script body of an inference CLI: ``main()``, with HF ``tokenizers`` free to use
    its own threads (these CLIs start no DataLoader workers it could oversubscribe; a user's
    ``TOKENIZERS_PARALLELISM`` wins)."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "true")
    main()


def add_device_arguments(parser: argparse.ArgumentParser) -> None:
    """``--device`` (auto, cpu, cuda, cuda:N), ``--precision`` (auto, fp32, bf16) and
    ``--cuda-graphs``/``--no-cuda-graphs``."""
    parser.add_argument("--device", default="auto", help="auto (GPU if any), cpu, cuda, cuda:N (default auto)")
    parser.add_argument("--precision", choices=("auto", "fp32", "bf16"), default="auto",
                        help="auto = bf16 autocast on GPU, fp32 on CPU")
    parser.add_argument("--cuda-graphs", action=argparse.BooleanOptionalAction, default=True,
                        help="on a GPU, replay batches of a repeated shape from CUDA graphs (default: on)")
