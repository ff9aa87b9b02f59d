"""Dropout's mask, cheaper than a Bernoulli draw per entry (model/nn/dropout.py's fast path).

On the CPU, torch's `bernoulli_` (what nn.Dropout and the plain mask run) calls the random generator once per
entry. This mask draws 64 random bits per call of numpy's PCG64 generator and reads them as two 32-bit integers:
an entry is dropped when its integer falls below a threshold placed at p * 2^32, so the drop probability is p to
within 2^-32 (1.2e-10), and the comparison writes its 0 / 1 straight into a float tensor (one pass fewer than a
bool mask and a cast). The generator is seeded by one draw of torch's generator, so torch.manual_seed repeats a
mask. On other devices (CUDA, MPS) torch's fused dropout kernel draws, scales and multiplies in one pass."""
from __future__ import annotations

import numpy as np
import torch
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
    """A bool CPU tensor of `shape`: True (kept) with probability 1 - p, independently per entry. Each call
    advances torch's generator by one draw."""
    return _lanes(torch.Size(shape)) >= drop_threshold(p)


def scaled_keep_mask(shape, p: float, dtype=torch.float32) -> torch.Tensor:
    """keep_mask as numbers: 1 / (1 - p) where kept, 0 where dropped (the same entries for the same seed)."""
    lanes = _lanes(torch.Size(shape))
    return torch.ge(lanes, drop_threshold(p), out=torch.empty(lanes.shape, dtype=dtype)).mul_(1.0 / (1.0 - p))


def dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    """Training-mode dropout of x with 0 < p < 1: this mask on the CPU, torch's fused kernel elsewhere."""
    if x.device.type != "cpu":
        return F.dropout(x, p, True)
    return x * scaled_keep_mask(x.shape, p, x.dtype)  # autograd keeps the mask: the backward is one product
