"""The paper's learning-rate schedule (section 5.3)."""
from __future__ import annotations



def noam_lr(step: int | float, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5); step counts from 1."""
    step = max(float(step), 1.0)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def noam_peak(d_model: int, warmup: int, factor: float = 1.0) -> tuple[int, float]:
    """The schedule peaks where both branches meet: at step == warmup."""
    return warmup, noam_lr(warmup, d_model, warmup, factor)


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0):
    """For torch.optim.lr_scheduler.LambdaLR with base lr 1.0 (scheduler steps count from 0)."""
    return lambda s: noam_lr(s + 1, d_model, warmup, factor)


ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9
