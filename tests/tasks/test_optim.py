import torch
from torch import nn

from bigbird_dna.tasks.optim import build_optimizer

OPTIM = {"lr": 1e-3, "weight_decay": 0.01, "betas": [0.9, 0.98], "warmup_steps": 10}


def _lrs(total, optim=OPTIM):
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 4), nn.LayerNorm(4))
    config = build_optimizer(model, optim, total)
    opt, sched = config["optimizer"], config["lr_scheduler"]["scheduler"]
    lrs = []
    for _ in range(total):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return opt, lrs


def test_warmup_then_linear_decay_to_zero():
    _, lrs = _lrs(100)
    assert lrs[0] < lrs[5] < lrs[9] <= 1e-3
    assert max(lrs) == lrs[10]
    assert all(a >= b for a, b in zip(lrs[10:], lrs[11:]))
    assert lrs[-1] < 2e-5


def test_fractional_warmup_is_a_share_of_the_run():
    _, lrs = _lrs(200, {**OPTIM, "warmup_steps": 0.1})
    assert max(range(200), key=lambda i: lrs[i]) == 20


def test_no_weight_decay_on_biases_norms_and_embeddings():
    opt, _ = _lrs(1)
    decayed, plain = opt.param_groups
    assert decayed["weight_decay"] == 0.01 and plain["weight_decay"] == 0.0
    assert [p.shape for p in decayed["params"]] == [torch.Size([4, 4])]
