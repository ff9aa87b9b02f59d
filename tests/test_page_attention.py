"""The scaled dot-product attention page and its helpers (app/attention_lab.py, model/lab.py)."""
from __future__ import annotations

import base64
import json
import math

import numpy as np
import pytest
import torch

from app import attention_lab as lab
from model import lab as mlab
from tests.apptest_util import assert_clean, run_page

Q, K, V = lab.EXAMPLE_Q, lab.EXAMPLE_K, lab.EXAMPLE_V


# ---------------------------------------------------------------- helpers

def figures(at) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def title(fig: dict) -> str:
    return fig["layout"].get("title", {}).get("text", "")


def fig_by_title(at, text: str) -> dict:
    matches = [f for f in figures(at) if title(f) == text]
    assert matches, [title(f) for f in figures(at)]
    return matches[0]


def heat_z(fig: dict) -> np.ndarray:
    z = fig["data"][0]["z"]
    if isinstance(z, dict):  # plotly's binary encoding
        arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        return arr.reshape([int(s) for s in str(z["shape"]).split(",")])
    return np.array([[np.nan if v is None else v for v in row] for row in z], dtype=float)


def outlined(fig: dict) -> set[tuple[int, int]]:
    """(row, col) of the cells a heatmap outlines in red."""
    return {(round(s["y0"] + 0.5), round(s["x0"] + 0.5)) for s in fig["layout"].get("shapes", [])
            if s.get("type") == "rect"}


def page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.warning] + [e.value for e in at.success] + [e.value for e in at.info]
    return "\n".join(parts)


def by_key(elements, key):
    return next(e for e in elements if e.key == key)


def with_inputs(q=None, k=None, v=None, tokens_q=None, tokens_k=None, lang="en", extra=None):
    def setup(at):
        for key, value in (("att_q", q), ("att_k", k), ("att_v", v), ("att_tokens_q", tokens_q),
                           ("att_tokens_k", tokens_k)):
            if value is not None:
                at.session_state[key] = value
        for key, value in (extra or {}).items():
            at.session_state[key] = value
    return run_page("attention.py", lang, setup=setup)


# ---------------------------------------------------------------- pure helpers

def test_parse_matrix_accepts_spaces_commas_and_brackets():
    a = lab.parse_matrix("0.1 0.3 0.5\n0.4, 0.2, 0.6\n", "Q")
    b = lab.parse_matrix("[[0.1, 0.3, 0.5], [0.4, 0.2, 0.6]]", "Q")
    c = lab.parse_matrix("  −1e30 ; 2\n\n3\t4  ", "Q")
    assert a.shape == (2, 3) and np.allclose(a, b)
    assert c.tolist() == [[-1e30, 2.0], [3.0, 4.0]]
    assert np.allclose(lab.parse_matrix(lab.matrix_to_text(Q), "Q"), Q)


@pytest.mark.parametrize("text, fragment", [
    ("", "empty"), ("   \n  ", "empty"), ("1 2\n3", "different lengths"), ("1 x 3", "'x' is not a number"),
    ("nan 1", "not a finite number"), ("1 inf", "not a finite number"), ("-inf", "not a finite number"),
    ("\n".join(["1"] * 65), "at most 64"), (" ".join(["1"] * 65), "at most 64"),
])
def test_parse_matrix_rejects_bad_input_in_both_languages(text, fragment):
    with pytest.raises(lab.InputProblem) as e:
        lab.parse_matrix(text, "Q")
    assert fragment in e.value.problem.en
    assert e.value.problem.ko and e.value.problem.ko != e.value.problem.en


def test_shape_checks():
    q, k, v = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5))
    assert lab.check_shapes(q, k, v) is None  # cross-attention shapes are fine
    assert "d_k" in lab.check_shapes(q, np.ones((4, 2)), v).en
    assert "every key needs" in lab.check_shapes(q, k, np.ones((3, 5))).en


def test_tokens_and_labels():
    assert lab.parse_tokens(" 나는 , 학교에,간다 ,, 🙂 ") == ["나는", "학교에", "간다", "🙂"]
    assert lab.labels_for(["a", "b"], 2, "q") == (["a", "b"], True)
    assert lab.labels_for(["a"], 3, "q") == (["q1", "q2", "q3"], False)


def test_term_by_term_text():
    assert lab.dot_product_text(Q[0], K[0]) == "0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2"
    assert lab.dot_product_text(Q[2], K[2]).endswith("= 1.51")  # 0.7·0.9 + 0.8·0.2 + 0.9·0.8
    long = lab.dot_product_text(np.ones(64), np.ones(64))
    assert "(n = 64)" in long and long.endswith("= 64")
    a = mlab.attention_stages(Q, K, V)
    assert lab.weighted_sum_text(a.weights[0], V).endswith(lab.fmt_vec(a.output[0]))
    assert lab.softmax_text(a.scaled[0], 0).endswith(f"= {lab.fmt(a.weights[0, 0])}")
    assert lab.softmax_text([1.0, -math.inf], 1).endswith("= 0")
    assert lab.fmt(1e30) == "1e+30" and lab.fmt(-math.inf) == "−∞" and lab.fmt(0.115470) == "0.1155"


def test_stages_match_hand_computation_and_torch():
    st = mlab.attention_stages(Q, K, V)
    q, k, v = (np.array(x) for x in (Q, K, V))
    s = q @ k.T
    assert st.raw[2, 2] == pytest.approx(0.7 * 0.9 + 0.8 * 0.2 + 0.9 * 0.8) == pytest.approx(1.51)
    assert np.allclose(st.scaled, s / math.sqrt(3))
    e = np.exp(s / math.sqrt(3))
    assert np.allclose(st.weights, e / e.sum(1, keepdims=True))
    ref = torch.nn.functional.scaled_dot_product_attention(*(torch.tensor(x)[None] for x in (Q, K, V)))[0]
    assert np.allclose(st.output, ref.numpy())
    causal = mlab.attention_stages(Q, K, V, causal=True)
    assert np.isneginf(causal.masked[0, 1]) and causal.weights[0, 0] == 1.0 and causal.weights[0, 2] == 0.0


def test_huge_values_stay_finite_and_overflow_is_reported():
    q = np.array([[1e30, 0.0], [0.0, 1.0]])
    st, problem = lab.safe_stages(q, q, q, causal=False)
    assert problem is None and np.isfinite(st.weights).all() and np.allclose(st.weights.sum(1), 1)
    st, problem = lab.safe_stages(q * 1e200, q * 1e200, q, causal=False)  # 1e230 · 1e230 > 1.8e308
    assert st is None and "too large" in problem.en


def test_printed_example_check_flags_the_right_cells():
    r = lab.example_report()
    # S: only S[2][0] = 0.7·0.2 + 0.8·0.1 + 0.9·0.3 = 0.49 is printed right
    assert r.differs["S"].sum() == 8 and not r.differs["S"][2, 0]
    assert r.rounded["S"][2, 2] == pytest.approx(1.51)
    # chain: S' follows from printed S / √3; S, A and O do not follow from the stage before
    assert {n: c.consistent for n, c in r.chain.items()} == {"S": False, "S'": True, "A": False, "O": False}
    assert r.chain["S"].off.sum() == 8
    en, ko = lab.chain_verdict(r)
    assert "S, A, O" in en and "S′" in en and "S, A, O" in ko
    sentences = lab.chain_sentences(r)
    assert len(sentences) == 4 and "**consistent**" in sentences[1][0] and "**inconsistent**" in sentences[2][0]


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


def test_softmax_jacobian_and_scaling_facts():
    s = np.array([0.3, -1.2, 2.0, 0.5])
    assert np.allclose(mlab.softmax_jacobian(s), mlab.softmax_jacobian_autograd(s))
    g = mlab.gradient_vs_scale([1.0, 2.0, 3.0], [1.0, 10.0, 100.0])
    assert g["max_abs"][0] > g["max_abs"][1] > g["max_abs"][2]
    raw, scaled = mlab.sample_dot_products(256, 4000, seed=0)
    assert raw.var() == pytest.approx(256, rel=0.1) and scaled.var() == pytest.approx(1, rel=0.1)


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


# ---------------------------------------------------------------- the page

@pytest.mark.parametrize("lang", ["en", "ko"])
def test_page_shows_the_corrected_example(lang):
    at = run_page("attention.py", lang)
    assert_clean(at)
    assert not at.error
    s = fig_by_title(at, "S = QKᵀ")
    assert np.allclose(heat_z(s), np.array(Q) @ np.array(K).T)
    assert s["data"][0]["text"][2][2] == "1.51"  # not the printed 1.20
    text = page_text(at)
    assert "0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2" in text
    # the printed-example check: outlines and the generated verdict
    printed_s = fig_by_title(at, "S as printed" if lang == "en" else "인쇄된 S")
    assert outlined(printed_s) == {(i, j) for i in range(3) for j in range(3)} - {(2, 0)}
    printed_a = fig_by_title(at, "A as printed" if lang == "en" else "인쇄된 A")
    assert len(outlined(printed_a)) == 9
    verdict = at.warning[-1].value
    if lang == "en":
        assert verdict.startswith("Inconsistent with the stage before: S, A, O.") and "Consistent: S′" in verdict
    else:
        assert "앞 단계와 맞지 않는 인쇄값: S, A, O." in verdict and "앞 단계와 맞는 인쇄값: S′" in verdict
    table = at.dataframe[0].value
    assert list(table.iloc[:, -1]) == (["inconsistent", "consistent", "inconsistent", "inconsistent"] if lang == "en"
                                       else ["불일치", "일치", "불일치", "불일치"])
    # every figure has a CSV download next to it
    assert len(at.get("download_button")) == len(figures(at))


def test_stepper_cell_explorer_and_all_stages():
    at = run_page("attention.py", "en")
    by_key(at.selectbox, "att_row").set_value(2)
    by_key(at.selectbox, "att_col").set_value(2)
    at.segmented_control[0].set_value("weights")
    at.run()
    assert_clean(at)
    text = page_text(at)
    assert "0.7×0.9 + 0.8×0.2 + 0.9×0.8 = 0.63 + 0.16 + 0.72 = 1.51" in text
    assert "1.51 ÷ 1.732 = 0.8718" in text
    w = heat_z(fig_by_title(at, "A = softmax(S′)"))
    assert np.allclose(w.sum(1), 1) and fig_by_title(at, "A = softmax(S′)")["data"][0]["zmax"] == 1
    by_key(at.toggle, "att_all").set_value(True)
    by_key(at.toggle, "att_causal").set_value(True)
    at.run()
    assert_clean(at)
    titles = [title(f) for f in figures(at)]
    for name in ("S = QKᵀ", "S′ = S / √dₖ", "mask (−∞)", "A = softmax(S′)", "O = AV"):
        assert name in titles
    masked = fig_by_title(at, "mask (−∞)")
    assert masked["data"][0]["text"][0][1] == "−∞" and masked["data"][0]["text"][1][0] != "−∞"
    causal_w = heat_z(fig_by_title(at, "A = softmax(S′)"))
    assert np.allclose(np.triu(causal_w, 1), 0) and causal_w[0, 0] == pytest.approx(1)


@pytest.mark.parametrize("q, k, v, fragment", [
    ("", None, None, "Q is empty"),
    ("0.1 0.2 0.3\n0.4 0.5", None, None, "different lengths"),
    ("0.1 abc 0.3", None, None, "'abc' is not a number"),
    ("nan 0.2 0.3", None, None, "not a finite number"),
    ("0.1 0.2", None, None, "d_k"),
    (None, None, "1 2 3\n4 5 6", "every key needs"),
    ("\n".join(["1 2 3"] * 65), None, None, "at most 64"),
    ("1e200 1e200 1e200", "1e200 1e200 1e200", "1 1 1", "too large"),
])
def test_bad_inputs_give_a_message_not_a_traceback(q, k, v, fragment):
    at = with_inputs(q=q, k=k if k is not None else None, v=v)
    assert_clean(at)
    assert at.error and fragment in at.error[0].value
    # the sections that do not need the inputs still render
    assert fig_by_title(at, "S as printed")


def test_bad_input_message_in_korean():
    at = with_inputs(q="0.1 abc 0.3", lang="ko")
    assert_clean(at)
    assert "숫자가 아닙니다" in at.error[0].value


def test_huge_numbers_one_token_and_cross_attention():
    at = with_inputs(q="1e30 0 0", k="1 2 3\n-1e30 0 1", v="1 2\n3 4", tokens_q="🙂", tokens_k="가, b")
    assert_clean(at)
    assert not at.error
    s = fig_by_title(at, "S = QKᵀ")
    assert s["data"][0]["text"][0] == ["1e+30", "-1e+60"]
    assert s["data"][0]["y"] == ["🙂"] and s["data"][0]["x"] == ["가", "b"]
    add = fig_by_title(at, "Additive weights (h = 16)")
    assert np.allclose(heat_z(add).sum(1), 1)


def test_sixty_four_tokens_hide_cell_text():
    g = np.random.default_rng(0)
    mat = lab.matrix_to_text(np.round(g.normal(size=(64, 4)), 2))
    tokens = ", ".join(f"토큰{i}" if i % 2 else f"w{i}😀" for i in range(64))
    at = with_inputs(q=mat, k=mat, v=mat, tokens_q=tokens)
    assert_clean(at)
    assert not at.error and not at.warning[:-1]
    s = fig_by_title(at, "S = QKᵀ")
    assert heat_z(s).shape == (64, 64) and not s["data"][0].get("text")
    assert s["layout"]["height"] <= 900


def test_token_count_mismatch_warns_and_uses_numbered_labels():
    at = with_inputs(tokens_q="only, two")
    assert_clean(at)
    assert any("q1…q3" in w.value for w in at.warning)
    assert fig_by_title(at, "S = QKᵀ")["data"][0]["y"] == ["q1", "q2", "q3"]


def test_sqrt_dk_section_and_timing():
    at = run_page("attention.py", "en", setup=lambda a: a.session_state.__setitem__("att_dk", 256))
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert float(metrics["measured Var(q·k)"]) == pytest.approx(256, rel=0.1)
    assert float(metrics["measured Var(q·k / √dₖ)"]) == pytest.approx(1, rel=0.1)
    at.select_slider(key="att_time_n").set_value(64)
    by_key(at.button, "att_time_btn").click()
    at.run()
    assert_clean(at)
    labels = [m.label for m in at.metric]
    assert "dot-product" in labels and "additive (h = 16)" in labels
