"""Linear(x) = x Wᵀ + b, nn.Linear's formula, parameters and state dict keys.

Every projection of the Transformer here is this one (attention's W^Q, W^K, W^V and W^O, the feed-forward
network's W1 and W2). It has no fast path: adding the bias after the product, in place, measured no faster than
torch's own kernel (docs/benchmarks.md, "Fast paths")."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Linear(nn.Linear):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight, self.bias)  # x Wᵀ + b
