"""Tokenize, mask and pad genome windows into MLM batches (see :class:`MLMCollator`)."""

from __future__ import annotations

import zlib
from typing import Any

import torch

from bigbird_dna.data.mlm.masking import IGNORE_INDEX, mask_tokens, replacement_candidates
from bigbird_dna.tokenizer import DNATokenizer
from bigbird_dna.tokenizer.specials import encode_with_specials


class MLMCollator:
    """Tokenize window strings into ``[CLS] tokens [SEP]``, mask, and pad.

    Batches are dicts of ``input_ids``, ``labels`` (``[B, T]`` int64), ``attention_mask``
    (``[B, T]`` bool, True for real tokens), ``label_bases`` (``[B, T]`` float32, bases spelled by
    the original token at each position, 0 at special tokens), ``selected_index`` (``[N]`` int64,
    the flat ``b * T + t`` positions whose label is scored, ascending: found here, on the host, the
    loss gathers them without a device sync), ``window_index`` (``[B]``, each window's index in its
    epoch) and ``windows`` (``record:start-end`` plus strand, for logs and tests).

    Each window is masked with its own generator, so its masks do not depend on the batch it
    lands in, the rank or worker that drew it, or a restart: with ``fixed_masks`` (validation)
    the generator is seeded from ``(seed, record, start)``, so every validation pass scores the
    same positions, and every selected token becomes [MASK] (``all_mask``: the honest basis of the
    val/test metrics); otherwise (training) from ``(seed, epoch, window index)``, with 80/10/10,
    in runs of ``mask_span`` tokens (:func:`~bigbird_dna.data.mlm.masking.mask_tokens`; evaluation
    always selects single tokens).
    """

    def __init__(self, tokenizer: DNATokenizer, max_tokens: int, mask_prob: float,
                 fixed_masks: bool = False, seed: int = 0, epoch: int = 0, mask_span: int = 1):
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.mask_prob = mask_prob
        self.fixed_masks = fixed_masks
        self.seed = seed
        self.epoch = epoch
        self.mask_span = 1 if fixed_masks else mask_span
        # Tokens made only of N are never masked: predicting N from N teaches nothing (Caduceus
        # keeps N out of the MLM loss too).
        self.unmaskable_ids = torch.tensor(sorted(tokenizer.special_ids | tokenizer.n_run_ids))
        self.replacement_ids = replacement_candidates(tokenizer.vocab_size, self.unmaskable_ids)  # once, not per row
        self.token_bases = torch.tensor(tokenizer.token_bases(), dtype=torch.float32)

    def tokenize(self, seqs: list[str]) -> list[list[int]]:
        """Rows of ids, ``[CLS] tokens [SEP]``, at most ``max_tokens`` long (extra tokens are cut),
        framed as every task frames them (:func:`~bigbird_dna.tokenizer.specials.encode_with_specials`)."""
        ids, mask, _ = encode_with_specials(self.tokenizer, seqs, self.max_tokens)
        return [row[:length].tolist() for row, length in zip(ids, mask.sum(1).tolist())]

    def _mask_seed(self, item: dict[str, Any]) -> int:
        if self.fixed_masks or "index" not in item:
            key = f"{self.seed}|{item['record']}:{item['start']}"
        else:
            key = f"{self.seed}|epoch {self.epoch}|window {item['index']}"
        return zlib.crc32(key.encode())

    def mask_row(self, row: list[int], item: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, labels)``, both ``[len(row)]``, of one tokenized window (see the class doc)."""
        generator = torch.Generator().manual_seed(self._mask_seed(item))
        inputs, labels = mask_tokens(torch.tensor([row]), self.unmaskable_ids, self.tokenizer.mask_id,
                                     self.tokenizer.vocab_size, self.mask_prob, generator,
                                     all_mask=self.fixed_masks, span=self.mask_span,
                                     replacement_ids=self.replacement_ids)
        return inputs[0], labels[0]

    def __call__(self, items: list[dict[str, Any]]) -> dict[str, Any]:
        rows = self.tokenize([item["seq"] for item in items])
        width = max(map(len, rows))
        inputs = torch.full((len(rows), width), self.tokenizer.pad_id, dtype=torch.long)
        labels = torch.full((len(rows), width), IGNORE_INDEX, dtype=torch.long)
        label_bases = torch.zeros((len(rows), width), dtype=torch.float32)
        attention_mask = torch.zeros((len(rows), width), dtype=torch.bool)
        for i, (row, item) in enumerate(zip(rows, items)):
            inputs[i, : len(row)], labels[i, : len(row)] = self.mask_row(row, item)
            label_bases[i, : len(row)] = self.token_bases[torch.tensor(row)]
            attention_mask[i, : len(row)] = True
        return {
            "input_ids": inputs,
            "labels": labels,
            "label_bases": label_bases,
            "attention_mask": attention_mask,
            "selected_index": (labels != IGNORE_INDEX).flatten().nonzero()[:, 0],
            "window_index": torch.tensor([item.get("index", -1) for item in items], dtype=torch.long),
            "windows": [f"{i['record']}:{i['start']}-{i['end']}{i.get('strand', '+')}" for i in items],
        }
