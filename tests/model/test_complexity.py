"""model/lessons/complexity.py: Table 1's formulas and the layer-timing harness (CPU, tiny sizes)."""
import math

import pytest
import torch

import numpy as np

from model.lessons.complexity import (
    LAYERS, TIMED, complexity_table, convolutional_over_n, curves_over_n, max_path_length, per_layer_cost, sequential_ops, time_layers,
    timing_summary,
)


def test_per_layer_cost_formulas():
    n, d, k, r = 100, 512, 3, 16
    assert per_layer_cost("self_attention", n, d, k, r) == n * n * d
    assert per_layer_cost("recurrent", n, d, k, r) == n * d * d
    assert per_layer_cost("convolutional", n, d, k, r) == k * n * d * d
    assert per_layer_cost("restricted", n, d, k, r) == r * n * d
    assert per_layer_cost("restricted", 8, d, k, 16) == 8 * 8 * d  # neighbourhood capped at n


def test_sequential_and_path_columns():
    n = 1000
    assert [sequential_ops(layer, n) for layer in LAYERS] == [1, n, 1, 1]
    assert max_path_length("self_attention", n) == 1
    assert max_path_length("recurrent", n) == n
    assert max_path_length("convolutional", n, k=10) == pytest.approx(3.0)  # log_10(1000)
    assert max_path_length("restricted", n, r=50) == pytest.approx(20.0)  # n / r
    assert max_path_length("convolutional", 2, k=64) == 1.0  # at least one layer
    with pytest.raises(ValueError):
        per_layer_cost("transformer", 1, 1)


def test_table_rows_and_crossover():
    rows = complexity_table(n=100, d=512, k=3, r=16)
    assert [r.layer for r in rows] == list(LAYERS)
    assert rows[0].cost_formula == "O(n²·d)" and rows[1].path_formula == "O(n)"
    assert rows[2].path_formula == "O(log_k n)" and rows[3].path_formula == "O(n/r)"
    assert rows[0].cost == 100 ** 2 * 512 and rows[1].cost == 100 * 512 ** 2
    assert rows[0].cost < rows[1].cost  # n < d: attention is cheaper
    d = 64  # the crossover: equal cost at n = d, attention dearer beyond
    assert per_layer_cost("self_attention", d, d) == per_layer_cost("recurrent", d, d)
    assert per_layer_cost("self_attention", 2 * d, d) > per_layer_cost("recurrent", 2 * d, d)
    with pytest.raises(ValueError):
        complexity_table(0, 8)
    # huge numbers stay finite floats / ints, no overflow error
    big = complexity_table(10_000_000, 100_000, 64, 1024)
    assert all(math.isfinite(r.cost) for r in big)


def test_curves_over_n_cover_n_and_the_crossover():
    out = curves_over_n(n=100, d=512, k=3, r=16)
    ns = out["n"]
    assert ns[0] == 1 and ns[-1] == 5120 and (np.diff(ns) > 0).all()
    assert set(out["cost"]) == set(out["path"]) == set(LAYERS)
    i = int(np.searchsorted(ns, 512))
    assert out["cost"]["self_attention"][i] == per_layer_cost("self_attention", ns[i], 512)
    assert (out["path"]["self_attention"] == 1).all() and (out["path"]["recurrent"] == ns).all()
    assert curves_over_n(n=10, d=4)["n"][-1] == 100  # at least up to 100


def test_convolutional_curves_for_each_k_are_curves_over_ns():
    """The why page sends the convolutional curves for every k: row i is curves_over_n's curve at ks[i], whatever r."""
    ks = (2, 3, 17, 64)
    out = convolutional_over_n(300, 64, ks)
    assert out["cost"].shape == out["path"].shape == (len(ks), len(out["n"]))
    for i, k in enumerate(ks):
        for r in (1, 16, 1024):
            ref = curves_over_n(300, 64, k, r)
            assert (out["n"] == ref["n"]).all()
            assert (out["cost"][i] == ref["cost"]["convolutional"]).all()
            assert (out["path"][i] == ref["path"]["convolutional"]).all()


def test_timing_summary_units_and_growth():
    res = {"n": [4, 16], "self_attention": [0.001, 0.002], "recurrent": [0.004, 0.032], "convolutional": [1e-4, 4e-4]}
    s = timing_summary(res)
    assert s["ms"] == {layer: pytest.approx([t * 1e3 for t in res[layer]]) for layer in TIMED}
    assert s["rows"][1]["n"] == 16 and s["rows"][1]["recurrent_us_per_position"] == pytest.approx(2000)
    assert s["rows"][0]["ratio"] == pytest.approx(4)
    assert s["growth"] == {"length": 4, "recurrent": pytest.approx(8), "self_attention": pytest.approx(2)}
    assert timing_summary({**res, **{k: v[:1] for k, v in res.items()}})["growth"] is None


def test_time_layers_tiny_sizes_positive_and_finite():
    threads = torch.get_num_threads()
    res = time_layers([4, 8], d=16, batch=1, device="cpu", repeats=1, budget_s=5.0, threads=1)
    assert res["n"] == [4, 8] and res["skipped"] == []
    for name in ("self_attention", "recurrent", "convolutional"):
        assert len(res[name]) == 2
        assert all(math.isfinite(t) and t > 0 for t in res[name]), (name, res[name])
    assert res["device"] == "cpu" and res["threads"] == 1
    assert torch.get_num_threads() == threads  # restored


def test_time_layers_lstm_budget_and_bad_input():
    res = time_layers([8, 4, 8], d=8, batch=1, repeats=1, recurrent="lstm", budget_s=0.0)
    assert res["n"] == [4] and res["skipped"] == [8]  # sorted, deduplicated; budget spent after the first
    assert res["recurrent_kind"] == "lstm" and res["recurrent"][0] > 0
    with pytest.raises(ValueError):
        time_layers([], d=8)
    with pytest.raises(ValueError):
        time_layers([0, 4], d=8)
    with pytest.raises(ValueError):
        time_layers([4], d=0)


def test_time_layers_skips_sizes_too_big_for_memory():
    from model.lessons.complexity import time_layers
    out = time_layers([8, 8192], d=8, batch=2, repeats=1, budget_s=30)
    assert out["n"] == [8] and out["skipped"] == [8192]


def test_time_layers_predicts_the_next_size_from_steady_runs_not_the_first_calls_warm_up(monkeypatch):
    """A cold process pays seconds once, on the first call of a kernel (oneDNN, allocator, lazy init): that
    cost must not make the budget skip the larger sizes of a first view (CI: a loaded machine showed n=16 only)."""
    import time as _time
    import model.lessons.complexity as cx
    real = cx.make_layers

    def slow_first_call(*args, **kwargs):
        layers = real(*args, **kwargs)
        attn, calls = layers["self_attention"], []

        def first_slow(x):
            if not calls:
                _time.sleep(0.4)
            calls.append(1)
            return attn(x)
        layers["self_attention"] = first_slow
        return layers
    monkeypatch.setattr(cx, "make_layers", slow_first_call)
    out = cx.time_layers([16, 64], d=16, batch=1, repeats=2, budget_s=2.0)
    assert out["n"] == [16, 64] and out["skipped"] == []
