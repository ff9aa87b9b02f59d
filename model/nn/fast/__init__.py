"""The fast paths: the formulas of model/nn, computed in another order where that was measured faster.

A reader of model/nn meets each formula in its plain form first; the module then asks `use(trick, device)`
whether to hand the same computation to a fast path here. The answers are decided in this one place:

- "dropout" (dropout_mask.py; used by model/nn/dropout.py, so by every dropout of the models here): on the CPU
  the mask comes from numpy's PCG64 generator, 64 random bits per call read as two 32-bit lanes, where
  torch's `bernoulli_` calls its generator once per entry; the same law (each entry kept with probability
  1 - p, to within 2^-32), other draws. On CUDA and MPS torch's fused dropout kernel draws, scales and
  multiplies in one pass. Buys a training step on the CPU about a tenth at the *tiny* benchmark size, a percent at
  *small* (17 masks a step).
- "loss" (output_loss.py; used by Transformer.forward(labels=...), so by the trainer): the output layer's
  projection and label-smoothed cross-entropy a block of rows at a time with a hand-written backward, so the
  (tokens × vocabulary) logits never exist whole and each block stays in the CPU's cache. The same value and
  gradients as `loss(project(h), labels)`. Buys the most of the two on the CPU with a large vocabulary; on a
  GPU one fused kernel over the whole logits wins, so the plain loss runs there.

The trainer's process has one more speed setting, about memory rather than a formula: it keeps the memory it
frees for its next step and asks torch for huge pages (model/training/allocator.py).

`FAST = False` (or `with switched(False):`) runs the plain formulas everywhere; tests/model/test_fast_paths.py
checks each fast path against its plain form and runs a training step both ways. The measurements behind the
table below are in docs/benchmarks.md; bench/fast_paths.py measures them again (a training step with FAST on and
off, and with each trick's devices emptied in WHERE, alternating in one process). A fast path stays only where it
wins: one for Linear (the bias added after the product) measured slower than torch's kernel and was removed."""
from __future__ import annotations

from contextlib import contextmanager

import torch

from model.nn.fast.dropout_mask import dropout
from model.nn.fast.output_loss import projected_cross_entropy

__all__ = ["FAST", "WHERE", "use", "switched", "dropout", "projected_cross_entropy"]

FAST = True  # the one switch: False computes every formula of model/nn plainly

WHERE = {  # the devices on which each fast path beats the plain formula
    "dropout": frozenset({"cpu", "cuda", "mps"}),
    "loss": frozenset({"cpu"}),
}


def use(trick: str, device: torch.device) -> bool:
    """Whether the fast path `trick` ("dropout" or "loss") runs on `device`."""
    return FAST and device.type in WHERE[trick]


@contextmanager
def switched(on: bool):
    """FAST set to `on` inside the block (for tests and benchmarks), restored after it."""
    global FAST
    before, FAST = FAST, bool(on)
    try:
        yield
    finally:
        FAST = before
