"""Linear(x) = x Wᵀ + b, nn.Linear's formula, parameters and state dict keys.

Every projection of the Transformer here is this one (attention's W^Q, W^K, W^V and W^O, the feed-forward
network's W1 and W2), so a fast path for it (model/nn/fast/linear.py, on the CPU) reaches them all."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from model.nn import fast


class Linear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not fast.use("linear", x.device):
            return F.linear(x, self.weight, self.bias)  # x Wᵀ + b
        return fast.linear(x, self.weight, self.bias)  # the same, the bias added after the product
