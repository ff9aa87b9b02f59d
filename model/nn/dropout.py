"""Dropout as the paper applies it (section 5.4): in training, each entry is zeroed with probability p and
the others are multiplied by 1 / (1 - p), so every entry keeps its expected value; at inference it does
nothing. Every dropout of our models (model.nn.layers, model.family) and the training page's live mask
(model.lessons.dropout_demo) is this one.

Why not torch's nn.Dropout: on the CPU it draws its mask with `bernoulli_`, one call of the random generator
per entry (7 ms for a 32 x 64 x 256 activation here, 17 masks in a training step of the *small* benchmark
model: 6% of the step, bench/train_throughput.py). This mask draws 64 random bits per call and reads them as
two 32-bit integers: an entry is dropped when its integer falls below a threshold placed at p * 2^32, so the
drop probability is p to within 2^-32 (1.2e-10), and a mask costs 3-4 ms. On other devices (CUDA, MPS)
torch's fused kernel is already fast and is used as it is. The generator is torch's own (torch.manual_seed
repeats a mask)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

_LANES = 2 ** 32  # values one 32-bit lane can take


def drop_threshold(p: float) -> int:
    """The int32 below which an entry is dropped: round(p * 2^32) of the 2^32 values lie below it."""
    return round(p * _LANES) - 2 ** 31


def _lanes(shape: torch.Size) -> torch.Tensor:
    """Uniform int32 values of `shape`, two per 64-bit draw of numpy's PCG64 generator, seeded by one draw of
    torch's generator."""
    n = shape.numel()
    seed = int(torch.empty((), dtype=torch.int64).random_())
    words = np.random.PCG64(seed).random_raw((n + 1) // 2)  # uint64: two uniform 32-bit lanes each
    return torch.from_numpy(words.view(np.int32)[:n]).view(shape)


def keep_mask(shape, p: float) -> torch.Tensor:
    """A bool CPU tensor of `shape`: True (kept) with probability 1 - p, independently per entry. The bits come
    from numpy's PCG64 generator, seeded by one draw of torch's generator, so torch.manual_seed repeats the
    mask (and each call advances torch's generator by one draw)."""
    return _lanes(torch.Size(shape)) >= drop_threshold(p)


def scaled_keep_mask(shape, p: float, dtype=torch.float32) -> torch.Tensor:
    """keep_mask as numbers: 1 / (1 - p) where kept, 0 where dropped (the same entries for the same seed). The
    comparison writes its 0 / 1 straight into a float tensor: one pass fewer than a bool mask then a cast."""
    lanes = _lanes(torch.Size(shape))
    return torch.ge(lanes, drop_threshold(p), out=torch.empty(lanes.shape, dtype=dtype)).mul_(1.0 / (1.0 - p))


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
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    scaled = scaled_keep_mask(x.shape, p, x.dtype)  # 0 or 1 / (1 - p); autograd keeps it for the backward pass,
    return x * scaled  # which is one multiplication, as with nn.Dropout


class Dropout(nn.Module):
    """nn.Dropout's interface (p, train / eval), this module's mask."""

    def __init__(self, p: float = 0.5):
        super().__init__()
        self.p = check_p(p)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
