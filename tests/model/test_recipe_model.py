"""The training recipe's computations: the schedule comparison (model/training/schedule.py), Adam traced
against the formulas (model/lessons/optim_demo.py) and label smoothing (model/training/smoothing.py)."""
import numpy as np
import pytest
import torch

from model.lessons.optim_demo import adam_trace
from model.training.schedule import compare_schedules, cooldown_scale, noam_lambda, noam_lr, noam_peak, step_grid
from model.training.smoothing import (
    loss_vs_confidence, minimise_confidence, optimal_confidence, smoothing_demo, target_distribution,
)


def test_step_grid_includes_the_peaks():
    grid = step_grid(1, 100_000, include=[4000, 8000, 300_000])
    assert grid[0] == 1 and grid[-1] == 100_000 and 4000 in grid and 8000 in grid and 300_000 not in grid
    assert (np.diff(grid) > 0).all() and (grid == grid.round()).all()
    log = step_grid(10, 10, log=True)  # an empty range still gives a curve
    assert log[0] == 10 and log[-1] == 11


def test_compare_schedules():
    out = compare_schedules([(512, 4000), (512, 8000), (512, 4000), (256, 4000)], 1, 100_000)
    assert [(c["d_model"], c["warmup"]) for c in out["curves"]] == [(512, 4000), (512, 8000), (256, 4000)]
    for c in out["curves"]:
        d, w = c["d_model"], c["warmup"]
        assert (c["peak_step"], c["peak_lr"]) == noam_peak(d, w)
        assert c["closed_form"] == pytest.approx(c["peak_lr"], rel=1e-12)
        assert c["lr_end"] == noam_lr(100_000, d, w) and c["peak_shown"]
        assert c["lr"].shape == out["steps"].shape
        assert out["steps"][c["lr"].argmax()] == w  # the drawn curve peaks at the warm-up
    hidden = compare_schedules([(512, 4000)], 5000, 9000, log=True)["curves"][0]
    assert not hidden["peak_shown"]


def test_adam_trace_matches_the_formulas():
    tr = adam_trace(1.0, 1.0, 0.1, 5)
    assert [r["step"] for r in tr["rows"]] == [1, 2, 3, 4, 5]
    assert tr["worst_gap"] < 1e-12
    assert tr["first_update"] == pytest.approx(-0.1, rel=1e-6)
    first = tr["rows"][0]
    assert first["grad"] == 1.0 and first["m"] == pytest.approx(0.1) and first["v"] == pytest.approx(0.02)
    assert first["new_theta"] == pytest.approx(first["theta"] + first["update"])
    for r, nxt in zip(tr["rows"], tr["rows"][1:]):
        assert nxt["theta"] == r["new_theta"]
    # the first step is lr whatever the gradient's scale
    for scale in (0.001, 1000.0):
        assert abs(adam_trace(1.0, scale, 0.1, 1)["first_update"]) == pytest.approx(0.1, rel=1e-5)


def test_label_smoothing_optimum():
    for V, eps in ((10, 0.1), (5, 0.3), (37000, 0.1)):
        q = target_distribution(V, eps)
        assert float(q.sum()) == pytest.approx(1.0)
        assert float(q[0]) == pytest.approx(1 - eps + eps / V)
        p, _ = minimise_confidence(V, eps)
        assert p == pytest.approx(optimal_confidence(V, eps), abs=1e-5)
        assert p < 1
    plain = loss_vs_confidence(torch.tensor([0.5, 0.9, 0.999]), 10, 0.0)
    assert torch.allclose(plain, -torch.log(torch.tensor([0.5, 0.9, 0.999], dtype=torch.float64)))


def test_smoothing_demo():
    ls = smoothing_demo(10, 0.1)
    assert ls["target"].shape == (10,) and ls["target"][0] == pytest.approx(0.91)
    assert ls["formula"] == pytest.approx(0.91) and ls["formula"] in ls["confidence"]
    assert (ls["confidence"] < 1).all() and ls["plain"].shape == ls["smoothed"].shape == ls["confidence"].shape
    p, loss = ls["best"]
    assert p == pytest.approx(0.91, abs=1e-5) and loss == pytest.approx(ls["entropy"], abs=1e-6)
    assert ls["smoothed"].min() >= loss - 1e-9  # the numerical minimum is the curve's minimum
    assert (np.diff(ls["plain"]) < 0).all()  # without smoothing: always better to be surer
    assert ls["loss_top"] >= 3.5
    with pytest.raises(ValueError):
        smoothing_demo(1, 0.1)


def test_cooldown_falls_linearly_over_the_last_share_of_the_steps():
    """--cooldown 0.25 of 100 steps: the paper's rate to step 75, then down to 1/26 of it at step 100."""
    assert [cooldown_scale(s, 100, 0.0) for s in (1, 50, 100)] == [1.0, 1.0, 1.0]
    assert cooldown_scale(75, 100, 0.25) == 1.0
    assert cooldown_scale(76, 100, 0.25) == pytest.approx(25 / 26)
    assert cooldown_scale(100, 100, 0.25) == pytest.approx(1 / 26)
    scales = [cooldown_scale(s, 100, 0.25) for s in range(76, 101)]
    assert all(a > b > 0 for a, b in zip(scales, scales[1:]))
    plain, cooled = noam_lambda(64, 10), noam_lambda(64, 10, total=100, cooldown=0.25)
    assert [cooled(s) for s in range(75)] == [plain(s) for s in range(75)]  # LambdaLR counts from 0
    assert cooled(99) == pytest.approx(plain(99) / 26)


def test_the_trainer_takes_a_cooldown_and_refuses_a_bad_one():
    from model.training.train import build_parser, option_problem
    args = build_parser().parse_args(["--cooldown", "0.3", "--out", "x"])
    assert args.cooldown == 0.3 and option_problem(args) is None
    assert build_parser().parse_args(["--out", "x"]).cooldown == 0.0  # the paper's schedule unless asked
    for bad in ("1", "-0.1", "nan"):
        problem = option_problem(build_parser().parse_args(["--cooldown", bad, "--out", "x"]))
        assert problem and "--cooldown" in problem
