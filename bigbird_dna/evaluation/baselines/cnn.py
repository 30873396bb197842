"""A small DeepBind/Basset-style CNN baseline, trained from scratch on the train split.

One-hot input ``[B, 4, L]`` (N and padding are all-zero columns), three convolutions (64 filters
of widths 15, 7, 5, each with batch norm and ReLU, max-pool 2 after the first two), a global max
pool, dropout and a linear layer to ``C`` logits. Trained with AdamW on both strands (each training
row is reverse-complemented with probability 1/2) and evaluated on both (the two strands'
probabilities averaged), or, for oriented data, on the given strand only (``both_strands``).
Early stopping on the validation loss (patience 3) keeps the best epoch's
weights; a time limit ends training at the first batch past it (that partial epoch is still
validated and may be kept). Seeded, and without touching
the global RNG state.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from bigbird_dna.evaluation.baselines.objective import loss_of, probabilities
from bigbird_dna.evaluation.baselines.sequences import CodedSet, reverse_complement_codes

log = logging.getLogger(__name__)


class SmallCNN(nn.Module):
    """``[B, 4, L]`` one-hot -> ``[B, num_outputs]`` logits."""

    def __init__(self, num_outputs: int, filters: int = 64, widths: tuple[int, ...] = (15, 7, 5),
                 dropout: float = 0.3):
        super().__init__()
        layers: list[nn.Module] = []
        channels = 4
        for i, width in enumerate(widths):
            layers += [nn.Conv1d(channels, filters, width, padding=width // 2), nn.BatchNorm1d(filters), nn.ReLU()]
            if i < len(widths) - 1:
                layers.append(nn.MaxPool1d(2, ceil_mode=True))
            channels = filters
        self.body = nn.Sequential(*layers)
        self.dropout = nn.Dropout(dropout)
        self.out = nn.Linear(filters, num_outputs)

    def forward(self, onehot: torch.Tensor) -> torch.Tensor:
        return self.out(self.dropout(self.body(onehot).amax(-1)))


def one_hot(codes: np.ndarray, device: torch.device) -> torch.Tensor:
    """Codes ``uint8 [B, L]`` -> ``float32 [B, 4, L]`` on ``device``; code 4 (N, padding) -> zeros."""
    x = torch.from_numpy(np.ascontiguousarray(codes)).to(device).long()
    return nn.functional.one_hot(x, 5)[..., :4].transpose(1, 2).float()


def batch_rows(width: int, base: int = 128) -> int:
    """Rows per batch for sequences of ``width`` bases: ``base`` at 1 kbp or less, fewer beyond."""
    return max(8, min(base, base * 1000 // max(width, 1)))


@dataclass
class CNNResult:
    """A trained CNN and how its training went."""

    model: SmallCNN
    epochs: int  # epochs trained
    best_epoch: int  # 1-based epoch whose weights were kept
    best_val_loss: float
    stopped: str  # "early_stopping", "max_epochs" or "time_limit"
    val_losses: list[float]
    seconds: float = 0.0  # of training


@torch.no_grad()
def predict_cnn(model: SmallCNN, data: CodedSet, kind: str, device: torch.device, both_strands: bool = True
                ) -> torch.Tensor:
    """Probabilities ``[N, C]`` (CPU): the mean of the forward and reverse-complement strands', or
    (``both_strands`` False) the given strand's."""
    model.eval()
    out = []
    step = batch_rows(data.codes.shape[1], 256)
    for lo in range(0, len(data), step):
        part = data.subset(np.arange(lo, min(lo + step, len(data))))
        strands = [part.codes] + ([reverse_complement_codes(part.codes, part.lengths)] if both_strands else [])
        probs = [probabilities(model(one_hot(c, device)).float(), kind) for c in strands]
        out.append((sum(probs) / len(probs)).cpu())
    return torch.cat(out) if out else torch.zeros(0, model.out.out_features)


def _val_loss(probs: torch.Tensor, labels: np.ndarray, kind: str) -> float:
    logits = probs.clamp(1e-7, 1 - 1e-7).log() if kind == "multiclass" else torch.logit(probs.clamp(1e-7, 1 - 1e-7))
    return float(loss_of(logits, torch.from_numpy(labels), kind))


def train_cnn(train: CodedSet, val: CodedSet, kind: str, device: torch.device | str = "cpu", seed: int = 0,
              max_epochs: int = 30, patience: int = 3, max_seconds: float | None = None, lr: float = 1e-3,
              weight_decay: float = 1e-2, widths: tuple[int, ...] = (15, 7, 5), both_strands: bool = True
              ) -> CNNResult:
    """Train a :class:`SmallCNN` on ``train``, early-stopped on ``val`` loss (scored as ``both_strands`` says).

    Args:
        train, val: coded sequences with labels ``[N, C]``.
        kind: the label kind (the loss: softmax cross-entropy or sigmoid BCE).
        max_epochs, patience: stop after ``max_epochs``, or ``patience`` epochs without a lower val loss.
        max_seconds: stop at the first batch past this many seconds (``None``: no limit).
        widths: the convolutions' widths (:class:`SmallCNN`); ``(w,)`` is a plain one-layer CNN with
            global max pooling, which sees which motifs occur but not where or in what order.
        both_strands: train on random strands and validate on both (True), or keep every sequence
            on its given strand (False: oriented sequences, such as promoters on their gene's strand).
    """
    device = torch.device(device)
    started = time.monotonic()
    rng = np.random.default_rng(seed)
    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        model = SmallCNN(train.labels.shape[1], widths=widths).to(device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
        rc_codes = reverse_complement_codes(train.codes, train.lengths) if both_strands else train.codes
        step = batch_rows(train.codes.shape[1])
        best_state, best_loss, best_epoch, losses, stopped = None, float("inf"), 0, [], "max_epochs"
        for epoch in range(1, max_epochs + 1):
            model.train()
            order = rng.permutation(len(train))
            out_of_time = False
            for lo in range(0, len(order), step):
                rows = order[lo:lo + step]
                if len(rows) < 2:  # batch norm needs two rows
                    continue
                flip = rng.random(len(rows)) < (0.5 if both_strands else 0.0)
                codes = np.where(flip[:, None], rc_codes[rows], train.codes[rows])
                codes = codes[:, :int(train.lengths[rows].max())]  # pad to this batch's longest
                labels = torch.from_numpy(train.labels[rows]).to(device)
                loss = loss_of(model(one_hot(codes, device)), labels, kind)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                out_of_time = max_seconds is not None and time.monotonic() - started > max_seconds
                if out_of_time:  # validate what there is, then stop
                    break
            losses.append(_val_loss(predict_cnn(model, val, kind, device, both_strands), val.labels, kind))
            if losses[-1] < best_loss:
                best_loss, best_epoch, best_state = losses[-1], epoch, copy.deepcopy(model.state_dict())
            log.debug("CNN baseline epoch %d: val loss %.4f", epoch, losses[-1])
            if epoch - best_epoch >= patience:
                stopped = "early_stopping"
                break
            if out_of_time and epoch < max_epochs:
                stopped = "time_limit"
                break
    model.load_state_dict(best_state)
    return CNNResult(model, len(losses), best_epoch, best_loss, stopped, losses, round(time.monotonic() - started, 1))
