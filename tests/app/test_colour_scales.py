"""Colour bars that say something: many small maps of weights near 1/L are not drawn white on a 0…1 scale; their
scale tops at their largest weight, and the page says so."""
import numpy as np

from app.charts.heatmaps import head_multiples, scale_top


def test_small_weights_get_a_scale_that_shows_them():
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.full(20, 50.0), size=(64, 20))  # 64 heads, every weight near 1/20
    heat = head_multiples(w, list("abcdefghijklmnopqrst"), list("abcdefghijklmnopqrst"))["data"][0]
    assert heat["zmin"] == 0 and heat["zmax"] < 0.2 and heat["zmax"] >= w.max()


def test_strong_weights_keep_the_shared_scale():
    w = np.zeros((32, 4, 4))
    w[..., 0] = 1.0
    assert head_multiples(w, list("abcd"), list("abcd"))["data"][0]["zmax"] == 1.0
    assert scale_top(np.full((2, 2), 0.049)) == 0.049 and scale_top(np.full((2, 2), 0.0512)) == 0.052
