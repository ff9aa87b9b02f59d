"""The training recipe's computations: the schedule comparison (model/schedule.py), Adam traced
against the formulas (model/optim_demo.py) and label smoothing (model/smoothing.py)."""
import numpy as np
import pytest
import torch

from model.optim_demo import adam_trace
from model.schedule import compare_schedules, noam_lr, noam_peak, step_grid
from model.smoothing import (loss_vs_confidence, minimise_confidence, optimal_confidence, smoothing_demo,
                             target_distribution)


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
