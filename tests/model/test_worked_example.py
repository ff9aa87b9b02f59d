"""model/lessons/worked_example.py: the learner's Q, K, V (parsed, checked, traced cell by cell) and the
article's printed example (recomputed, and checked stage by stage)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from model.lessons import lab as mlab
from model.lessons import worked_example as wx
from model.messages import UserError

Q, K, V = wx.EXAMPLE_Q, wx.EXAMPLE_K, wx.EXAMPLE_V


def text(m) -> str:
    return "\n".join(" ".join(f"{x:g}" for x in row) for row in m)


# ---------------------------------------------------------------- parsing and shapes

def test_parse_matrix_accepts_spaces_commas_and_brackets():
    a = wx.parse_matrix("0.1 0.3 0.5\n0.4, 0.2, 0.6\n", "Q")
    b = wx.parse_matrix("[[0.1, 0.3, 0.5], [0.4, 0.2, 0.6]]", "Q")
    c = wx.parse_matrix("  −1e30 ; 2\n\n3\t4  ", "Q")
    assert a.shape == (2, 3) and np.allclose(a, b)
    assert c.tolist() == [[-1e30, 2.0], [3.0, 4.0]]
    assert np.allclose(wx.parse_matrix(text(Q), "Q"), Q)


@pytest.mark.parametrize("source, code, args", [
    ("", "empty", {"name": "Q"}),
    ("   \n  ", "empty", {"name": "Q"}),
    (", ,\n;", "empty", {"name": "Q"}),
    ("1 2\n3", "ragged", {"name": "Q", "width": 2, "row": 2, "row_width": 1}),
    ("1 x 3", "not_a_number", {"name": "Q", "row": 1, "cell": "x"}),
    ("nan 1", "not_finite", {"name": "Q", "row": 1, "cell": "nan"}),
    ("1 inf", "not_finite", {"name": "Q", "row": 1, "cell": "inf"}),
    ("-inf", "not_finite", {"name": "Q", "row": 1, "cell": "-inf"}),
    ("\n".join(["1"] * 65), "too_many_rows", {"name": "Q", "rows": 65, "limit": 64}),
    (" ".join(["1"] * 65), "too_many_cols", {"name": "Q", "cols": 65, "limit": 64}),
])
def test_parse_matrix_rejects_bad_input_with_a_message_code(source, code, args):
    with pytest.raises(UserError) as e:
        wx.parse_matrix(source, "Q")
    assert e.value.message.code == f"attention.errors.{code}"
    assert e.value.message.args == args


def test_shape_checks():
    q, k, v = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5))
    wx.check_shapes(q, k, v)  # cross-attention shapes are fine
    with pytest.raises(UserError) as e:
        wx.check_shapes(q, np.ones((4, 2)), v)
    assert e.value.message.code == "attention.errors.d_k" and e.value.message.args == {"d_q": 3, "d_k": 2}
    with pytest.raises(UserError) as e:
        wx.check_shapes(q, k, np.ones((3, 5)))
    assert e.value.message.code == "attention.errors.values"


def test_worked_from_text_computes_every_stage_and_reports_the_first_problem():
    w = wx.worked_from_text(text(Q), text(K), text(V), causal=True)
    assert (w.n, w.m, w.d_k, w.d_v) == (3, 3, 3, 3) and w.causal
    assert np.allclose(w.stages.weights, mlab.attention_stages(Q, K, V, causal=True).weights)
    with pytest.raises(UserError) as e:
        wx.worked_from_text("1 2 3", "", "1 x")
    assert e.value.message.code == "attention.errors.empty" and e.value.message.args == {"name": "K"}
    with pytest.raises(UserError) as e:
        wx.worked_from_text("1e200 1e200 1e200", "1e200 1e200 1e200", "1 1 1")
    assert e.value.message.code == "attention.errors.overflow"


# ---------------------------------------------------------------- one cell

def test_cell_trace_follows_every_stage():
    w = wx.worked_from_text(text(Q), text(K), text(V))
    c = wx.cell_trace(w, 2, 2)
    assert c.dot.products.tolist() == pytest.approx([0.7 * 0.9, 0.8 * 0.2, 0.9 * 0.8])
    assert c.dot.total == pytest.approx(1.51) == c.raw
    assert c.d_k == 3 and c.root_dk == pytest.approx(math.sqrt(3))
    assert c.scaled == pytest.approx(1.51 / math.sqrt(3))
    assert c.softmax.weight == pytest.approx(w.stages.weights[2, 2]) and not c.softmax.masked
    assert np.allclose(c.mix.output, w.stages.output[2])
    masked = wx.cell_trace(wx.worked_from_text(text(Q), text(K), text(V), causal=True), 0, 1)
    assert masked.softmax.masked and masked.softmax.weight == 0.0


def test_term_helpers():
    d = wx.dot_terms(np.ones(64), np.ones(64))
    assert d.total == 64 and d.products.shape == (64,)
    s = wx.softmax_term([0.0, math.log(3.0), -math.inf], 1)
    assert s.weight == pytest.approx(0.75) and not s.masked
    assert wx.softmax_term([1.0, -math.inf], 1).weight == 0.0
    assert wx.softmax_term([1e30, 0.0], 0).weight == 1.0  # stable for huge scores
    m = wx.weighted_sum([0.25, 0.75], [[1.0, 0.0], [0.0, 1.0]])
    assert m.output.tolist() == [0.25, 0.75]


# ---------------------------------------------------------------- the printed example

def test_printed_example_check_flags_the_right_cells():
    r = wx.example_report()
    # S: only S[2][0] = 0.7·0.2 + 0.8·0.1 + 0.9·0.3 = 0.49 is printed right
    assert r.differs["S"].sum() == 8 == r.n_diff("S") and not r.differs["S"][2, 0]
    assert r.rounded["S"][2, 2] == pytest.approx(1.51)
    assert r.printed["S"][2, 2] == 1.20
    # chain: S' follows from printed S / √3; S, A and O do not follow from the stage before
    assert {n: c.consistent for n, c in r.chain.items()} == {"S": False, "S'": True, "A": False, "O": False}
    assert r.chain["S"].off.sum() == 8 and not r.consistent
    rows = wx.chain_rows(r)
    assert [(x.name, x.stage, x.consistent) for x in rows] == [
        ("S", "raw", False), ("S'", "scaled", True), ("A", "weights", False), ("O", "output", False)]
    assert rows[0].off == 8 and rows[0].cells == 9 and rows[0].max_diff == round(r.chain["S"].max_abs_diff, 4)


def test_a_correct_print_is_consistent():
    st = mlab.attention_stages(Q, K, V)
    printed = {"S": np.round(st.raw, 2)}
    printed["S'"] = np.round(printed["S"] / math.sqrt(3), 2)
    printed["A"] = np.round(mlab.softmax_rows(printed["S'"]), 2)
    printed["O"] = np.round(printed["A"] @ np.array(V), 2)
    r = wx.example_report(printed=printed)
    assert r.consistent and r.n_diff("S") == 0


def test_half_unit():
    assert wx.half_unit(2) == pytest.approx(0.005) and wx.half_unit(0) == 0.5


# ---------------------------------------------------------------- the exercise: find the wrong cells

def test_the_example_names_its_source():
    # the worked example comes from this Korean blog post (shared/seeds/); its title, word for word
    assert wx.EXAMPLE_SOURCE == "[딥러닝, 논문리뷰] Attention Is All You Need 2 - Attention Mechanism"


def test_score_guess_counts_found_missed_and_false_alarms():
    r = wx.example_report()
    wrong_s = r.differs["S"]  # every printed S cell but S[간다, 나는] is wrong
    assert int(wrong_s.sum()) == 8 and not wrong_s[2, 0]
    s = wx.score_guess(wrong_s, [0, 6])  # S[0, 0] (wrong) and S[2, 0] (right)
    assert (s.found, s.missed, s.false_alarms, s.wrong, s.cells) == (1, 7, 1, 8, 9) and not s.perfect
    every = [i for i in range(9) if wrong_s.flat[i]]
    assert wx.score_guess(wrong_s, every).perfect
    assert wx.score_guess(wrong_s, []).missed == 8
    assert wx.score_guess(wrong_s, [99, -1, 0, 0]).found == 1  # out-of-range and repeated picks ignored
    right = np.zeros((2, 2), bool)
    assert wx.score_guess(right, []).perfect and wx.score_guess(right, [3]).false_alarms == 1
