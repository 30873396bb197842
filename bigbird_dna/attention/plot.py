"""Heatmap of a block layout, like BigBird paper Fig. 1: one panel per head, cells coloured by part.

    python -m bigbird_dna.attention.plot --preset bigbird_itc --seq-len 4096 --block-size 64 \\
        --heads 2 --out layout.png
    python -m bigbird_dna.attention.plot --preset window_random --seq-len 2048 --param num_random=2 \\
        --out ablation.png

Rows are query blocks and columns key blocks; a cell is coloured when the query block attends to
the key block: global (rows and columns of global blocks), window, random, or dense.
"""

from __future__ import annotations

import argparse
import sys

try:
    import matplotlib
except ImportError:  # the [plot] extra; this module is a CLI, so say so in one line
    print("error: drawing layouts needs the optional package matplotlib: pip install 'bigbird_dna[plot]'.",
          file=sys.stderr)
    sys.exit(2)

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import ListedColormap  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from bigbird_dna.attention.layout import num_blocks_for  # noqa: E402
from bigbird_dna.attention.patterns import PRESETS, SparsePattern, preset  # noqa: E402
from bigbird_dna.errors import InputError, exit_on_input_error  # noqa: E402

PARTS = ("global", "window", "random", "dense")
MAX_CELLS = 64_000_000  # block-map cells one picture may hold: a few GB of memory while drawing
COLOURS = ("white", "#d62728", "#1f77b4", "#2ca02c", "#7f7f7f")  # index 0 = not attended


def component_map(pattern: SparsePattern, mask: torch.Tensor) -> torch.Tensor:
    """Label each cell of a block mask ``[H, n, n]``: 0 = not attended, else ``1 + PARTS.index(part)``."""
    n = mask.shape[-1]
    blocks = torch.arange(n)
    is_global = (blocks < pattern.global_head) | (blocks >= n - pattern.global_tail)
    global_cell = is_global[:, None] | is_global[None, :]
    window_cell = ((blocks[:, None] - blocks[None, :]).abs() <= pattern.window // 2) & (pattern.window > 0)
    if pattern.dense:
        part = torch.full((n, n), PARTS.index("dense"))
    else:
        part = torch.where(global_cell, 0, torch.where(window_cell, 1, 2))
    return torch.where(mask, part + 1, 0)


def plot_layout(pattern: SparsePattern, num_heads: int, num_blocks: int, block_size: int, *, seed: int = 0,
                layer: int = 0, title: str = "") -> plt.Figure:
    """Figure with one heatmap panel per head of ``pattern.build(...)``."""
    mask = pattern.build(num_heads, num_blocks, block_size, seed=seed, layer=layer).to_block_mask()
    labels = component_map(pattern, mask)
    fig, axes = plt.subplots(1, num_heads, figsize=(max(4 * num_heads, 6), 5), squeeze=False)
    for head, ax in enumerate(axes[0]):
        ax.imshow(labels[head].numpy(), cmap=ListedColormap(COLOURS), vmin=0, vmax=len(PARTS),
                  interpolation="nearest")
        ax.set_title(f"head {head}")
        ax.set_xlabel("key block")
        ax.set_ylabel("query block")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # blocks are whole: no 2.5 on the axes
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    present = sorted(set(labels.unique().tolist()) - {0})
    fig.legend(handles=[Patch(color=COLOURS[i], label=PARTS[i - 1]) for i in present],
               loc="lower center", ncol=len(present), frameon=False)
    fig.suptitle(title, fontsize="medium")
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    return fig


def _param(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not value.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=INT, got {text!r}")
    return name, int(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bigbird_dna.attention.plot",
                                     description="Draw a block-sparse attention layout as a PNG heatmap.")
    parser.add_argument("--preset", default="bigbird_itc", choices=sorted(PRESETS))
    parser.add_argument("--param", action="append", type=_param, default=[], metavar="NAME=INT",
                        help="preset parameter, repeatable, e.g. --param num_random=2")
    parser.add_argument("--seq-len", type=int, default=4096, help="tokens (default 4096)")
    parser.add_argument("--block-size", type=int, default=64)
    parser.add_argument("--heads", type=int, default=2, help="panels: one per head")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="layout.png", help="output PNG path")
    return parser


@exit_on_input_error
def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    if args.seq_len < 1 or args.block_size < 1 or args.heads < 1:
        raise InputError("--seq-len, --block-size and --heads must be positive")
    pattern = preset(args.preset, **dict(args.param))
    num_blocks = num_blocks_for(args.seq_len, args.block_size)
    cells = args.heads * num_blocks * num_blocks  # the picture is a dense [heads, blocks, blocks] map
    if cells > MAX_CELLS:
        raise InputError(f"{args.heads} heads x {num_blocks}^2 blocks is {cells:,} cells to draw, more than "
                         f"{MAX_CELLS:,}: raise --block-size (e.g. {args.block_size * 8}), shorten --seq-len or "
                         "draw fewer --heads.")
    note = "" if pattern.fits(num_blocks) else " (too short: the model uses dense attention here)"
    params = ", ".join(f"{k}={v}" for k, v in args.param)
    title = (f"{args.preset}({params})\nT={args.seq_len}, b={args.block_size}, layer {args.layer}, "
             f"seed {args.seed}{note}")
    fig = plot_layout(pattern, args.heads, num_blocks, args.block_size, seed=args.seed, layer=args.layer,
                      title=title)
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
