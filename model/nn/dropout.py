"""Dropout as the paper applies it (section 5.4): in training, each entry is zeroed with probability p and
the others are multiplied by 1 / (1 - p), so every entry keeps its expected value; at inference it does
nothing. Every dropout of our models (model.nn.layers, model.family) and the training page's live mask
(model.lessons.dropout_demo) is this one.

The plain formula below draws a Bernoulli(1 - p) mask. Where the fast path runs (model/nn/fast: a cheaper
mask on the CPU, torch's fused kernel on a GPU) the law is the same and the draws are other ones; both
repeat under torch.manual_seed."""
from __future__ import annotations

import torch
import torch.nn as nn

from model.nn import fast


def check_p(p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    return p


def dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Dropout(x): the identity outside training or with p = 0; zeros with p = 1."""
    if not training or p == 0.0:
        return x
    check_p(p)
    if p == 1.0:
        return x * 0.0
    if not fast.use("dropout", x.device):
        keep = torch.empty_like(x).bernoulli_(1.0 - p)  # 1 with probability 1 - p, else 0
        return x * keep / (1.0 - p)
    return fast.dropout(x, p)


class Dropout(nn.Module):
    """nn.Dropout's interface (p, train / eval), this module's dropout."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = check_p(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
