"""The paper's learning-rate schedule (section 5.3) and Adam's settings (section 5.3)."""
from __future__ import annotations

import numpy as np

ADAM_BETAS = (0.9, 0.98)
ADAM_EPS = 1e-9


def noam_lr(step: int | float, d_model: int, warmup: int, factor: float = 1.0) -> float:
    """lrate = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5); step counts from 1."""
    step = max(float(step), 1.0)
    return factor * d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)


def noam_peak(d_model: int, warmup: int, factor: float = 1.0) -> tuple[int, float]:
    """The schedule peaks where both branches meet: at step == warmup."""
    return warmup, noam_lr(warmup, d_model, warmup, factor)


def cooldown_scale(step: int | float, total: int, fraction: float) -> float:
    """1 until the last `fraction` of a run's `total` steps, then falling linearly towards 0 at its end (step
    counts from 1; the last step still moves, by 1 / (its cool-down steps + 1) of the rate). Not in the paper,
    which trained for a fixed 100k steps; a short run ends on a low rate instead of mid-way down the schedule."""
    if fraction <= 0:
        return 1.0
    start = total * (1.0 - fraction)
    if step <= start:
        return 1.0
    return max(0.0, (total + 1 - step) / (total + 1 - start))


def noam_lambda(d_model: int, warmup: int, factor: float = 1.0, total: int = 0, cooldown: float = 0.0):
    """For torch.optim.lr_scheduler.LambdaLR with base lr 1.0 (scheduler steps count from 0); with
    `cooldown` > 0, the last `cooldown` share of `total` steps falls linearly (cooldown_scale)."""
    return lambda s: noam_lr(s + 1, d_model, warmup, factor) * cooldown_scale(s + 1, total, cooldown)


def step_grid(lo: int, hi: int, log: bool = False, include=()) -> np.ndarray:
    """Whole steps from lo to hi to draw curves on (400 geometric or 600 even points), plus the
    steps in `include` that fall inside (each curve's warm-up, so its peak is on the grid)."""
    hi = max(hi, lo + 1)
    base = np.geomspace(lo, hi, 400) if log else np.linspace(lo, hi, 600)
    extra = [s for s in include if lo <= s <= hi]
    return np.unique(np.concatenate([base, extra]).round())


def compare_schedules(pairs, lo: int, hi: int, log: bool = False) -> dict:
    """The schedule for each distinct (d_model, warmup) pair over steps lo..hi.

    Returns {"steps": the grid, "end": the last step, "curves": [{"d_model", "warmup", "lr" (len(steps),),
    "peak_step", "peak_lr", "closed_form": d^-0.5 * w^-0.5, "lr_end": the rate at the last step,
    "peak_shown": whether the peak lies inside lo..hi}]}."""
    pairs = list(dict.fromkeys(pairs))
    hi = max(hi, lo + 1)
    steps = step_grid(lo, hi, log, [w for _, w in pairs])
    curves = []
    for d, w in pairs:
        peak_step, peak_lr = noam_peak(d, w)
        curves.append({"d_model": d, "warmup": w, "lr": np.array([noam_lr(s, d, w) for s in steps]),
                       "peak_step": peak_step, "peak_lr": peak_lr, "closed_form": d ** -0.5 * w ** -0.5,
                       "lr_end": noam_lr(hi, d, w), "peak_shown": lo <= peak_step <= hi})
    return {"steps": steps, "end": hi, "curves": curves}
