"""The PyTorch attention backend's two paths side by side: where the dense path pays.

    python benchmarks/torch_attention_paths.py [--out PATH]

For BigBird layouts (``bigbird_itc``, 4 heads, head dim 32, fp32, CPU) at several lengths, so at
several shares of the block grid, times ``torch_block_sparse_attention`` with ``method="gather"``
and ``method="dense"`` in one process: forward (inference mode) and forward+backward, median of 5.
``DENSE_MIN_DENSITY`` in ``bigbird_dna/attention/torch_backend.py`` comes from these ratios.
Results: ``torch_attention_paths.json`` in ``benchmarks/results/<date>_<machine>/``; run it on an
idle machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common.results import add_out_argument, default_out, script_command, write_json  # noqa: E402
from benchmarks.genome_scale import machine  # noqa: E402
from bigbird_dna.attention import layout_for, num_blocks_for, torch_block_sparse_attention  # noqa: E402
from bigbird_dna.runtime.malloc import keep_freed_memory  # noqa: E402

CASES = [(32, 502, 16), (32, 1024, 8), (32, 2048, 4), (64, 2048, 4), (32, 4096, 2)]  # (block, tokens, batch)


def median_ms(fn, repeats: int = 5) -> float:
    fn()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(1e3 * statistics.median(times), 2)


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_out_argument(parser, "torch_attention_paths")
    args = parser.parse_args(argv)
    keep_freed_memory()  # as predict does
    torch.manual_seed(0)
    rows = []
    before = machine()
    for block, seq, batch in CASES:
        layout = layout_for("bigbird_itc", num_heads=4, num_blocks=num_blocks_for(seq, block), block_size=block,
                            layer=0, seed=0, device=torch.device("cpu"))
        q, k, v = (torch.randn(batch, 4, seq, 32, requires_grad=True) for _ in range(3))
        row = {"block_size": block, "tokens": seq, "batch": batch,
               "density": round(layout.nnz / (4 * layout.num_q_blocks * layout.num_k_blocks), 3)}
        for method in ("gather", "dense"):
            def forward(method=method):
                with torch.inference_mode():
                    torch_block_sparse_attention(q, k, v, layout, method=method)
            row[f"{method}_forward_ms"] = median_ms(forward)
            row[f"{method}_forward_backward_ms"] = median_ms(
                lambda method=method: torch_block_sparse_attention(q, k, v, layout, method=method).sum().backward())
        row["dense_speedup_forward"] = round(row["gather_forward_ms"] / row["dense_forward_ms"], 2)
        row["dense_speedup_forward_backward"] = round(
            row["gather_forward_backward_ms"] / row["dense_forward_backward_ms"], 2)
        rows.append(row)
        print(row, flush=True)
    result = {"benchmark": "torch_attention_paths", "preset": "bigbird_itc", "heads": 4, "head_dim": 32,
              "dtype": "fp32", "device": "cpu", "threads": torch.get_num_threads(), "runs": rows,
              "machine_before": before, "machine_after": machine(), "command": script_command(__file__, argv)}
    return write_json(args.out or default_out("torch_attention_paths"), result)


if __name__ == "__main__":
    main()
