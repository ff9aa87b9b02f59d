"""Linear on the CPU with the bias added after the product (model/nn/linear.py's fast path).

torch's CPU `addmm` (what nn.Linear runs) first writes the bias into every row of the output and then has the
matrix product add onto it, which reads that output back. Here the product writes the output once and the bias
is added in place after it: the same sums in another order (float rounding only), the same gradients (the
product's backward does not need its output, so adding in place is allowed)."""
from __future__ import annotations

import torch
import torch.nn.functional as F


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """F.linear(x, weight, bias), the product first and the bias added in place."""
    if bias is None:
        return F.linear(x, weight)
    return x.matmul(weight.t()).add_(bias)
