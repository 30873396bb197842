"""The block layouts a model attends over, pinned so that inference reproduces training.

Random blocks are a deterministic function of (seed, layer, head, number of blocks), so a model
could regenerate them. But a layout generator may change between versions, and a model must keep
attending over the graph it was trained on. :class:`LayoutRegistry` therefore records every layout
it hands out and saves the tables with checkpoints and exports; a loaded model uses the saved tables
verbatim and only generates layouts for lengths it never saw.
"""

from __future__ import annotations

import torch

from bigbird_dna.attention import BlockLayout, layout_for
from bigbird_dna.model.config import AttentionConfig


class LayoutRegistry:
    """Hands out one :class:`BlockLayout` per (layer, number of blocks), and remembers it.

    Sequences too short for the sparse preset get the dense layout for that call only; the next,
    longer call is sparse again (no sticky fallback: HF BigBird switches a model to dense for good
    once it sees a short input).
    """

    def __init__(self, config: AttentionConfig, num_heads: int):
        self.config = config
        self.num_heads = num_heads
        self._pinned: dict[tuple[int, int], BlockLayout] = {}

    def get(self, layer: int, num_blocks: int, device: torch.device) -> BlockLayout:
        key = (layer, num_blocks)
        layout = self._pinned.get(key)
        if layout is None:
            # layout_for falls back to the dense layout when num_blocks is too short for the preset
            layout = layout_for(self.config.preset, self.num_heads, num_blocks, self.config.block_size,
                                layer=layer, seed=self.config.seed, device="cpu", **self.config.params)
            self._pinned[key] = layout
        if layout.kv_idx.device != device:
            layout = layout.to(device)
            self._pinned[key] = layout
        return layout

    def state_dict(self) -> dict[str, dict]:
        """Plain tensors and ints, keyed ``"layer/num_blocks"``: safe for ``weights_only`` loads."""
        return {f"{layer}/{blocks}": {k: (v.cpu() if torch.is_tensor(v) else v)
                                      for k, v in layout.state_dict().items()}
                for (layer, blocks), layout in self._pinned.items()}

    def load_state_dict(self, state: dict[str, dict]) -> None:
        for key, tables in state.items():
            layer, blocks = (int(part) for part in key.split("/"))
            self._pinned[(layer, blocks)] = BlockLayout.from_state_dict(tables)
