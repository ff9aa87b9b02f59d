"""model/lessons/lab.py: the stages of scaled dot-product attention, why we divide by √dₖ, additive scoring and
its cost and timing."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from model.lessons import lab as mlab
from model.messages import UserError
from model.lessons.worked_example import EXAMPLE_K as K
from model.lessons.worked_example import EXAMPLE_Q as Q
from model.lessons.worked_example import EXAMPLE_V as V


# ---------------------------------------------------------------- scaled dot-product, stage by stage

@pytest.mark.parametrize("n, m", [(1, 1), (3, 3), (2, 5), (5, 2), (4, 1)])
def test_causal_keep_is_the_causal_mask_with_queries_at_the_end(n, m):
    keep = mlab.causal_keep(n, m)
    expected = torch.tensor([[j <= i + (m - n) for j in range(m)] for i in range(n)])
    assert torch.equal(keep, expected)


def test_stages_match_hand_computation_and_torch():
    st = mlab.attention_stages(Q, K, V)
    q, k = np.array(Q), np.array(K)
    s = q @ k.T
    assert st.raw[2, 2] == pytest.approx(0.7 * 0.9 + 0.8 * 0.2 + 0.9 * 0.8) == pytest.approx(1.51)
    assert np.allclose(st.scaled, s / math.sqrt(3))
    e = np.exp(s / math.sqrt(3))
    assert np.allclose(st.weights, e / e.sum(1, keepdims=True))
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(x)[None] for x in (Q, K, V)))[0]
    assert np.allclose(st.output, ref.numpy())
    causal = mlab.attention_stages(Q, K, V, causal=True)
    assert np.isneginf(causal.masked[0, 1]) and causal.weights[0, 0] == 1.0 and causal.weights[0, 2] == 0.0


def test_stage_lookup_row_sums_and_visible_stages():
    st = mlab.attention_stages(Q, K, V)
    assert st.stage("raw") is st.raw and st.stage("masked") is None and st.stage("output") is st.output
    with pytest.raises(KeyError):
        st.stage("nope")
    assert np.allclose(st.row_sums, 1)
    assert mlab.visible_stages(False) == ["raw", "scaled", "weights", "output"]
    assert mlab.visible_stages(True) == list(mlab.STAGE_IDS)
    more_queries = mlab.attention_stages(np.ones((4, 2)), np.ones((2, 2)), np.ones((2, 1)), causal=True)
    assert more_queries.row_sums.tolist() == [0.0, 0.0, 1.0, 1.0]  # the first queries see no key


def test_huge_values_stay_finite_and_overflow_is_reported():
    q = np.array([[1e30, 0.0], [0.0, 1.0]])
    st = mlab.checked_stages(q, q, q)
    assert st.finite and np.isfinite(st.weights).all() and np.allclose(st.weights.sum(1), 1)
    with pytest.raises(UserError) as e:
        mlab.checked_stages(q * 1e200, q * 1e200, q)  # 1e230 · 1e230 > 1.8e308
    assert e.value.message.code == "attention.errors.overflow"


@pytest.mark.parametrize("seed", range(6))
def test_a_correctly_rounded_example_passes_the_chain_check(seed):
    """The tolerance must accept any honest example printed to 2 decimals."""
    g = np.random.default_rng(seed)
    n, m, d = g.integers(1, 6), g.integers(1, 6), g.integers(1, 8)
    q, k, v = (np.round(g.uniform(-1, 1, shape), 1) for shape in ((n, d), (m, d), (m, d)))
    st = mlab.attention_stages(q, k, v)
    s = np.round(st.raw, 2)
    s2 = np.round(s / math.sqrt(d), 2)
    a = np.round(mlab.softmax_rows(s2), 2)
    o = np.round(a @ v, 2)
    checks = mlab.check_printed_chain(q, k, v, s, s2, a, o)
    assert all(c.consistent for c in checks.values()), {n: c.max_abs_diff for n, c in checks.items()}


# ---------------------------------------------------------------- why divide by sqrt(d_k)

def test_softmax_jacobian_and_scaling_facts():
    s = np.array([0.3, -1.2, 2.0, 0.5])
    assert np.allclose(mlab.softmax_jacobian(s), mlab.softmax_jacobian_autograd(s))
    g = mlab.gradient_vs_scale([1.0, 2.0, 3.0], [1.0, 10.0, 100.0])
    assert g["max_abs"][0] > g["max_abs"][1] > g["max_abs"][2]
    raw, scaled = mlab.sample_dot_products(256, 4000, seed=0)
    assert raw.var() == pytest.approx(256, rel=0.1) and scaled.var() == pytest.approx(1, rel=0.1)


def test_dot_product_samples():
    s = mlab.dot_product_samples(256, 4000, seed=0)
    assert s.n_samples == 4000 and s.d_k == 256
    assert s.var_raw == pytest.approx(256, rel=0.1) and s.var_scaled == pytest.approx(1, rel=0.1)
    assert np.allclose(s.scaled, s.raw / 16)
    assert np.array_equal(mlab.dot_product_samples(256, 4000, seed=0).raw, s.raw)  # seeded


def test_saturation_example():
    sat = mlab.saturation_example()
    assert sat.small.tolist() == [1, 2, 3] and sat.big.tolist() == [10, 20, 30] and sat.factor == 10
    assert np.allclose(sat.p_small.sum(), 1) and np.allclose(sat.p_big.sum(), 1)
    assert sat.top_small == pytest.approx(0.665, abs=1e-3) and sat.top_big > 0.9999


def test_gradient_report():
    g = mlab.gradient_report(64)
    assert g.sqrt_dk == 8.0 and len(g.curve["scale"]) == 61
    assert g.curve["scale"][0] == pytest.approx(0.1) and g.curve["scale"][-1] == pytest.approx(40)
    assert g.at_one == pytest.approx(mlab.gradient_vs_scale([1, 2, 3], [1.0])["max_abs"][0])
    assert g.at_sqrt_dk < g.at_one / 10  # a saturated softmax passes almost no gradient


# ---------------------------------------------------------------- additive scoring

def test_additive_scores_and_flops():
    p = mlab.additive_params(3, 3, 5, seed=1)
    q, k = torch.tensor(Q, dtype=torch.float64), torch.tensor(K, dtype=torch.float64)
    e = mlab.additive_scores(q, k, p["w_q"], p["w_k"], p["v"])
    ref = torch.tensor([[float(p["v"] @ torch.tanh(p["w_q"] @ q[i] + p["w_k"] @ k[j])) for j in range(3)]
                        for i in range(3)], dtype=torch.float64)
    assert torch.allclose(e, ref)
    assert torch.allclose(mlab.additive_scores(q, k, p["w_q"], p["w_k"], p["v"], chunk=2), e)
    f = mlab.scoring_flops(n=4, m=5, d=3, hidden=2)
    assert f["dot"] == 2 * 4 * 5 * 3 + 4 * 5
    assert f["additive"] == 2 * 4 * 3 * 2 + 2 * 5 * 3 * 2 + 4 * 4 * 5 * 2


def test_additive_weights():
    p = mlab.additive_params(3, 3, 16, seed=2)
    e = mlab.additive_scores(torch.tensor(Q), torch.tensor(K), p["w_q"], p["w_k"], p["v"])
    w = mlab.additive_weights(Q, K, 16, seed=2)
    assert np.allclose(w, torch.softmax(e, -1).numpy()) and np.allclose(w.sum(1), 1)
    causal = mlab.additive_weights(Q, K, 16, seed=2, causal=True)
    assert np.allclose(np.triu(causal, 1), 0) and causal[0, 0] == pytest.approx(1)
    cross = mlab.additive_weights([[1e30, 0, 0]], [[1, 2, 3], [-1e30, 0, 1]], 16)  # huge inputs stay finite
    assert cross.shape == (1, 2) and np.allclose(cross.sum(1), 1)


def test_time_scoring_reports_both_and_the_ratio():
    times = mlab.time_scoring(16, 8, 4, repeats=2)
    assert times["dot"] > 0 and times["additive"] > 0
    assert times["ratio"] == pytest.approx(times["additive"] / times["dot"])
