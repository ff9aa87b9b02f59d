"""The scaled dot-product attention page and its text helpers (pages/views/attention_lab.py). The numbers are
tested in tests/model/test_lab.py and tests/model/test_worked_example.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
from app.i18n import LANGS

from pages.views import attention_lab as lab
from app.format import compact, vector
from app.charts.style import MODEBAR_ROOM
from app.i18n import t
from model.lessons import lab as mlab
from model.lessons import worked_example as wx
from tests.apptest_read import figures, outlined, tables, title, z_of
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util

Q, K, V = wx.EXAMPLE_Q, wx.EXAMPLE_K, wx.EXAMPLE_V


# ---------------------------------------------------------------- helpers

def fig_by_title(at, text: str) -> dict:
    matches = [f for f in figures(at) if title(f) == text]
    assert matches, [title(f) for f in figures(at)]
    return matches[0]


def page_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.warning] + [e.value for e in at.success] + [e.value for e in at.info]
    return "\n".join(parts)


def by_key(elements, key):
    return next(e for e in elements if e.key == key)


def chain_tables(at) -> list:
    return [d for d in tables(at) if t("attention.chain.col_stage") in d.columns]


def with_inputs(q=None, k=None, v=None, tokens_q=None, tokens_k=None, lang="en", extra=None):
    def setup(at):
        for key, value in (("att_q", q), ("att_k", k), ("att_v", v), ("att_tokens_q", tokens_q),
                           ("att_tokens_k", tokens_k)):
            if value is not None:
                at.session_state[key] = value
        for key, value in (extra or {}).items():
            at.session_state[key] = value
    return run_page("attention.py", lang, setup=setup)


# ---------------------------------------------------------------- text helpers (pages/views/attention_lab.py)

def test_matrix_text_round_trip():
    assert wx.matrix_text([[0.1, 2.0], [-1e30, 3.5]]) == "0.1 2\n-1e+30 3.5"
    assert np.allclose(wx.parse_matrix(wx.matrix_text(Q), "Q"), Q)


def test_tokens_and_labels():
    assert lab.parse_tokens(" 나는 , 학교에,간다 ,, 🙂 ") == ["나는", "학교에", "간다", "🙂"]
    assert lab.labels_for(["a", "b"], 2, "q") == (["a", "b"], True)
    assert lab.labels_for(["a"], 3, "q") == (["q1", "q2", "q3"], False)
    assert lab.labels_for(["x" * 30], 1, "q")[0] == ["x" * 24]


def test_term_by_term_text():
    assert lab.dot_product_text(wx.dot_terms(Q[0], K[0])) == "0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2"
    assert lab.dot_product_text(wx.dot_terms(Q[2], K[2])).endswith("= 1.51")  # 0.7·0.9 + 0.8·0.2 + 0.9·0.8
    long = lab.dot_product_text(wx.dot_terms(np.ones(64), np.ones(64)))
    assert "(n = 64)" in long and long.endswith("= 64")
    a = mlab.attention_stages(Q, K, V)
    assert lab.weighted_sum_text(wx.weighted_sum(a.weights[0], V)).endswith(vector(a.output[0]))
    assert lab.softmax_text(wx.softmax_term(a.scaled[0], 0)).endswith(f"= {compact(a.weights[0, 0])}")
    assert lab.softmax_text(wx.softmax_term([1.0, -math.inf], 1)).endswith("= 0")
    assert compact(1e30) == "1e+30" and compact(-math.inf) == "−∞" and compact(0.115470) == "0.1155"


@pytest.mark.parametrize("lang", list(LANGS))
def test_stage_names(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    names = [lab.stage_name(s) for s in mlab.STAGE_IDS]
    assert names == ["S = QKᵀ", "S′ = S / √dₖ", "mask (−∞)" if lang == "en" else "마스크 (−∞)", "A = softmax(S′)",
                     "O = AV"]


@pytest.mark.parametrize("lang", list(LANGS))
def test_cell_lines(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    w = wx.worked_from_text(wx.matrix_text(Q), wx.matrix_text(K), wx.matrix_text(V), causal=True)
    lines = lab.cell_lines(wx.cell_trace(w, 0, 1), "나`는", "학교에")
    assert lines[0] == "**S[나\\`는, 학교에]** = q1 · k2 = `0.1×0.5 + 0.3×0.7 + 0.5×0.4 = 0.05 + 0.21 + 0.2 = 0.46`"
    assert lines[1] == "**S′** = S ÷ √3 = `0.46 ÷ 1.732 = 0.2656`"
    assert lines[2] == t("attention.cell.masked", query_no=1, key_no=2)
    assert ("mask" if lang == "en" else "마스크") in lines[2]
    assert lines[3].endswith("`exp(−∞) / (…) = 0`") and len(lines) == 5
    assert len(lab.cell_lines(wx.cell_trace(w, 1, 0), "a", "b")) == 4  # no mask line for a visible key


@pytest.mark.parametrize("lang", list(LANGS))
def test_chain_check_text(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    r = wx.example_report()
    rows = wx.chain_rows(r)
    verdict = lab.chain_verdict(r)
    assert verdict == t("attention.chain.verdict_mixed", bad="S, A, O", good="S′")
    sentences = lab.chain_sentences(rows)
    assert len(sentences) == 4
    ok, off = ("**consistent**", "**inconsistent**") if lang == "en" else ("**일치**", "**불일치**")
    assert ok in sentences[1] and off in sentences[2] and "S′" in sentences[1]
    table = lab.chain_table(rows)
    no, yes = t("attention.chain.inconsistent"), t("attention.chain.consistent")
    assert [list(row.values())[-1] for row in table] == [no, yes, no, no]
    assert list(table[0].values())[:3] == ["S", t("attention.chain.source.raw"), "8 / 9"]


def test_chain_verdict_when_all_agree_or_none_do():
    r = wx.example_report()
    for c in r.chain.values():
        c.off[:] = False
    assert lab.chain_verdict(r) == t("attention.chain.verdict_all")
    for c in r.chain.values():
        c.off[:] = True
    assert lab.chain_verdict(r) == t("attention.chain.verdict_none", bad="S, S′, A, O")


# ---------------------------------------------------------------- the page

@pytest.mark.parametrize("lang", list(LANGS))
def test_page_shows_the_corrected_example(lang):
    at = run_page("attention.py", lang)
    assert_clean(at)
    assert not at.error
    s = fig_by_title(at, "S = QKᵀ")
    assert np.allclose(z_of(s), np.array(Q) @ np.array(K).T)
    assert s["data"][0]["text"][2][2] == "1.51"  # not the printed 1.20
    text = page_text(at)
    assert "0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2" in text
    # every figure has a CSV download next to it
    assert len(at.get("download_button")) == len(figures(at))


ARTICLE = "[딥러닝, 논문리뷰] Attention Is All You Need 2 - Attention Mechanism"
GUESS_KEYS = ["att_guess_S", "att_guess_S-prime", "att_guess_A", "att_guess_O"]


def open_printed_tab(at, label: str) -> None:
    """What a click on one of section 4's tabs does: the section draws that tab only."""
    at.session_state["att_printed_tab"] = label
    at.run()
    assert_clean(at)


@pytest.mark.parametrize("lang", list(LANGS))
def test_printed_example_is_an_exercise_that_names_its_source(lang):
    """Section 4 names the blog post and says its example has errors; the answer stays hidden (no
    outlines, no computed matrices, no chain verdict, no permanent warning) until asked for."""
    at = run_page("attention.py", lang)
    assert_clean(at)
    text = page_text(at)
    assert text.count(ARTICLE) >= 2  # in the inputs section and in section 4
    assert ("blog post" if lang == "en" else "블로그 글") in text
    assert not at.warning  # the permanent yellow verdict is gone
    printed_s = fig_by_title(at, "S as printed" if lang == "en" else "인쇄된 S")
    assert outlined(printed_s) == set()
    computed = "S computed from Q, K, V" if lang == "en" else "Q, K, V로 계산한 S"
    assert computed not in [title(f) for f in figures(at)]
    assert [m.key for m in at.multiselect] == GUESS_KEYS[:1], "only the open tab is drawn"
    for label, key in zip(["S", "S′", "A", "O"], GUESS_KEYS):  # each tab, opened, draws its own exercise
        open_printed_tab(at, label)
        assert [m.key for m in at.multiselect] == [key]
        assert fig_by_title(at, f"{label} as printed" if lang == "en" else f"인쇄된 {label}")
    assert not chain_tables(at)  # the chain check is part of the answer


@pytest.mark.parametrize("lang", list(LANGS))
def test_guess_then_reveal_the_answer(lang, monkeypatch):
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    at = run_page("attention.py", lang)
    s_cells = by_key(at.multiselect, "att_guess_S")
    assert len(s_cells.options) == 9 and s_cells.options[0].startswith("S[나는, 나는]")
    s_cells.set_value([0, 6]).run()  # S[나는, 나는] (wrong in the print) and S[간다, 나는] (right)
    by_key(at.toggle, "att_reveal").set_value(True).run()
    assert_clean(at)
    assert not at.warning
    printed_s = fig_by_title(at, "S as printed" if lang == "en" else "인쇄된 S")
    assert outlined(printed_s) == {(i, j) for i in range(3) for j in range(3)} - {(2, 0)}
    computed = fig_by_title(at, "S computed from Q, K, V" if lang == "en" else "Q, K, V로 계산한 S")
    assert computed["data"][0]["text"][2][2] == "1.51"
    text = page_text(at)
    assert t("attention.printed.score", found=1, wrong=8, false_alarms=1, name="S") in text
    assert len(at.get("download_button")) == len(figures(at))
    open_printed_tab(at, "A")
    printed_a = fig_by_title(at, "A as printed" if lang == "en" else "인쇄된 A")
    assert len(outlined(printed_a)) == 9
    text = page_text(at)
    # the chain check, now shown, with its generated verdict (not a warning box)
    table = chain_tables(at)[0]
    assert list(table.iloc[:, -1]) == (["inconsistent", "consistent", "inconsistent", "inconsistent"] if lang == "en"
                                       else ["불일치", "일치", "불일치", "불일치"])
    if lang == "en":
        assert "Inconsistent with the stage before: S, A, O." in text and "Consistent: S′" in text
    else:
        assert "앞 단계와 맞지 않는 인쇄값: S, A, O." in text and "앞 단계와 맞는 인쇄값: S′" in text
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
    w = z_of(fig_by_title(at, "A = softmax(S′)"))
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
    causal_w = z_of(fig_by_title(at, "A = softmax(S′)"))
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
    assert np.allclose(z_of(add).sum(1), 1)


def test_sixty_four_tokens_hide_cell_text():
    g = np.random.default_rng(0)
    mat = wx.matrix_text(np.round(g.normal(size=(64, 4)), 2))
    tokens = ", ".join(f"토큰{i}" if i % 2 else f"w{i}😀" for i in range(64))
    at = with_inputs(q=mat, k=mat, v=mat, tokens_q=tokens)
    assert_clean(at)
    assert not at.error and not at.warning
    s = fig_by_title(at, "S = QKᵀ")
    assert z_of(s).shape == (64, 64) and not s["data"][0].get("text")
    # every one of the 64 row labels readable: 18 px a row, plus the title, axes and toolbar strip
    assert s["layout"]["height"] <= 18 * 64 + 300 + MODEBAR_ROOM


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


def test_reset_brings_back_the_example_after_bad_input():
    at = with_inputs(q="1 x")
    assert at.error
    by_key(at.button, "att_reset").click()
    at.run()
    assert_clean(at)
    assert not at.error and at.session_state["att_q"] == wx.matrix_text(Q)


# ---------------------------------------------------------------- options that change under the cell pickers
# grow Q to 4 rows, pick row 4, shrink back to 3 rows, touch any control ->
# TypeError: '>=' not supported between 'str' and 'int'. A selectbox's browser side keeps the label it
# last showed ("4: q4"); when that label is no longer an option, Streamlit hands the page the label
# itself (a str) instead of an index. AppTest normally re-sends the current option, so `browser_keeps`
# makes it send the stale label, as the browser does.

Q3 = wx.matrix_text(Q)
Q4 = Q3 + "\n0.1 0.1 0.1"


def browser_keeps(at, key: str, label: str) -> None:
    """From now on the selectbox `key` reports `label`, as a browser holding a stale selection does."""
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    w = by_key(at.selectbox, key)

    def stale(self):
        ws = WidgetState()
        ws.id, ws.string_value = self.id, label
        return ws
    w.__class__ = type("Stale" + w.__class__.__name__, (w.__class__,), {"_widget_state": property(stale)})


def touch(at, control: str):
    if control == "causal":
        by_key(at.toggle, "att_causal").set_value(True)
    elif control == "stage":
        at.segmented_control(key="att_stage").set_value("weights")
    elif control == "reset":
        by_key(at.button, "att_reset").click()
    elif control == "all":
        by_key(at.toggle, "att_all").set_value(True)
    at.run()


def grow_pick_shrink(lang="en"):
    at = run_page("attention.py", lang)
    by_key(at.text_area, "att_q").set_value(Q4).run()
    assert by_key(at.selectbox, "att_row").options[-1] == "4: q4"
    by_key(at.selectbox, "att_row").set_value(3).run()
    assert_clean(at)
    assert "**S[q4, 나는]**" in page_text(at)
    by_key(at.text_area, "att_q").set_value(Q3).run()
    assert_clean(at)
    return at


@pytest.mark.parametrize("control", ["causal", "stage", "reset", "all"])
def test_grow_pick_the_new_row_shrink_then_touch_a_control(control):
    at = grow_pick_shrink()
    row = by_key(at.selectbox, "att_row")
    assert row.options == ["1: 나는", "2: 학교에", "3: 간다"] and row.value in range(3)
    browser_keeps(at, "att_row", "4: q4")  # what the browser still shows
    touch(at, control)
    assert_clean(at)
    row = by_key(at.selectbox, "att_row")
    assert row.value == 0 and row.options == ["1: 나는", "2: 학교에", "3: 간다"]
    assert "**S[나는, 나는]**" in page_text(at)


def test_typed_key_tokens_relabel_the_columns_without_a_crash():
    at = run_page("attention.py", "en")
    by_key(at.selectbox, "att_col").set_value(2).run()
    by_key(at.text_input, "att_tokens_k").set_value("a, b, c").run()
    assert_clean(at)
    assert by_key(at.selectbox, "att_col").options == ["1: a", "2: b", "3: c"]
    browser_keeps(at, "att_col", "3: 간다")  # the label before the tokens were typed
    touch(at, "causal")
    assert_clean(at)
    col = by_key(at.selectbox, "att_col")
    assert col.value == 2  # the same column, found again by its number
    assert "**S[나는, c]**" in page_text(at)


def test_reset_recovers_from_stale_picks_and_bad_input():
    at = grow_pick_shrink()
    browser_keeps(at, "att_row", "4: q4")
    by_key(at.text_area, "att_q").set_value("1 x").run()
    assert_clean(at)
    assert at.error
    touch(at, "reset")
    assert_clean(at)
    assert not at.error and at.session_state["att_q"] == Q3
    assert by_key(at.selectbox, "att_row").value == 0 and by_key(at.selectbox, "att_col").value == 0
    assert not by_key(at.toggle, "att_causal").value


@pytest.mark.parametrize("value, size, expected", [
    (2, 3, 2), (3, 3, 0), (-1, 3, 0), (None, 3, 0), ("4: q4", 3, 0), ("3: 간다", 3, 2), ("2: x: y", 5, 1),
    ("q4", 3, 0), (True, 3, 0), (1.0, 3, 0), ("0: a", 3, 0), ("#2: I love roses.", 3, 1), ("#4: x", 3, 0),
])
def test_valid_index(value, size, expected):
    assert lab.valid_index(value, size) == expected


# ---------------------------------------------------------------- kept inputs and shareable links

from streamlit.testing.v1 import AppTest  # noqa: E402


# A link's view: cross-attention of three 2-d queries over three keys, with the causal mask, the output
# stage picked and one cell chosen (rows and columns are 1-based in links).
LINK_Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
LINK_K = np.array([[1.0, 2.0], [0.0, 1.0], [2.0, 0.0]])
LINK_V = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
LINK = {"q": "1 0\n0 1\n1 1", "k": "1 2\n0 1\n2 0", "v": "1 0\n0 1\n0.5 0.5", "tokens_q": "a, b, c",
        "tokens_k": "x, y, z", "causal": "1", "stage": "output", "row": "3", "col": "2", "dk": "16",
        "dk_seed": "3", "hidden": "8", "add_seed": "5"}


def open_link(params: dict, lang: str = "en") -> AppTest:
    return apptest_util.open_link("attention.py", params, lang)


notices = apptest_util.toasts


def my_attention(q, k, v, causal):
    """softmax(QKᵀ / √dₖ) V, with numpy, masked keys −∞ (every row here keeps its first key)."""
    s = q @ k.T / np.sqrt(q.shape[1])
    if causal:
        s = np.where(np.triu(np.ones_like(s, bool), 1), -np.inf, s)
    a = np.exp(s - s.max(1, keepdims=True))
    a /= a.sum(1, keepdims=True)
    return q @ k.T, a, a @ v


def test_a_link_with_q_k_v_shows_that_view_and_its_numbers():
    at = open_link(LINK)
    assert_clean(at)
    assert not at.error and not notices(at)
    # the widgets hold the link's values
    assert [by_key(at.text_area, k).value for k in ("att_q", "att_k", "att_v")] == [LINK["q"], LINK["k"], LINK["v"]]
    assert by_key(at.text_input, "att_tokens_q").value == "a, b, c"
    assert by_key(at.text_input, "att_tokens_k").value == "x, y, z"
    assert by_key(at.toggle, "att_causal").value is True
    assert at.segmented_control(key="att_stage").value == "output"
    assert by_key(at.selectbox, "att_row").value == 2 and by_key(at.selectbox, "att_col").value == 1
    assert at.slider(key="att_dk").value == 16 and at.slider(key="att_hidden").value == 8
    assert at.number_input(key="att_dk_seed").value == 3 and at.number_input(key="att_add_seed").value == 5
    # ... and the numbers they drive, against numpy
    s, a, o = my_attention(LINK_Q, LINK_K, LINK_V, causal=True)
    out = fig_by_title(at, "O = AV")
    assert np.allclose(z_of(out), o) and out["data"][0]["y"] == ["a", "b", "c"]
    dot = fig_by_title(at, t("attention.additive.dot_title"))
    assert np.allclose(z_of(dot), a) and dot["data"][0]["x"] == ["x", "y", "z"]
    assert np.allclose(z_of(fig_by_title(at, "Additive weights (h = 8)")).sum(1), 1)
    text = page_text(at)
    assert "n = 3 queries, m = 3 keys, dₖ = 2, dᵥ = 2." in text
    assert "**S[c, y]** = q3 · k2 = `1×0 + 1×1 = 0 + 1 = 1`" in text  # S[2, 1] = 1
    assert s[2, 1] == 1
    assert f"= {compact(a[2, 1])}`" in text and a[2, 1] == pytest.approx(0.14, abs=1e-3)  # A[c, y]
    assert float(metrics_of(at)["measured Var(q·k)"]) == pytest.approx(16, rel=0.15)
    # the address bar keeps describing the view
    for name, value in LINK.items():
        assert at.query_params[name] == value, name


def metrics_of(at) -> dict:
    return {m.label: m.value for m in at.metric}


@pytest.mark.parametrize("lang", list(LANGS))
def test_link_with_the_weights_stage(lang):
    at = open_link({"q": "1 0\n0 1\n1 1", "k": "1 2\n0 1\n2 0", "v": "1 0\n0 1\n0.5 0.5", "stage": "weights"}, lang)
    assert_clean(at)
    _, a, _ = my_attention(LINK_Q, LINK_K, LINK_V, causal=False)
    assert np.allclose(z_of(fig_by_title(at, "A = softmax(S′)")), a)
    assert fig_by_title(at, "A = softmax(S′)")["data"][0]["y"] == wx.EXAMPLE_TOKENS  # the example's 3 tokens
    assert at.query_params["lang"] == lang


DEFAULT_PARAMS = {"q": wx.matrix_text(Q), "k": wx.matrix_text(K), "v": wx.matrix_text(V),
                  "tokens_q": ", ".join(wx.EXAMPLE_TOKENS), "tokens_k": "", "causal": "0", "stage": "raw",
                  "row": "1", "col": "1", "dk": "64", "hidden": "16", "add_seed": "0", "dk_seed": "0",
                  "all_stages": "0"}


@pytest.mark.parametrize("name, value", [
    ("q", "1 2\n3"),                  # ragged
    ("k", "0.1 abc 0.3"),             # not a number
    ("v", "nan 1 2"),                 # not finite
    ("q", ""),                        # empty
    ("q", "1 " * 50_000),             # 100_000 characters
    ("tokens_q", "a" * 100_000),
    ("k", "<b>x</b>"),                # html where numbers are expected
    ("dk", "<b>x</b>"),
    ("hidden", "<b>1</b>"),
    ("dk", "0"), ("dk", "513"), ("dk", "6.5"), ("dk", "1" * 100_000),
    ("hidden", "129"), ("add_seed", "-1"), ("dk_seed", "10001"),
    ("causal", "maybe"),
    ("stage", "nonsense"), ("stage", "masked"),  # the mask stage needs the mask
    ("row", "4"), ("col", "0"), ("row", "mean"),
    ("all_stages", "<b>1</b>"),
])
def test_bad_link_values_fall_back_with_a_notice(name, value):
    at = open_link({name: value})
    assert_clean(at)
    assert not at.error  # the default example, no error box
    shown = notices(at)
    assert len(shown) == 1 and f"“{name}”" in shown[0], shown
    assert len(value) < 4 or value[:20] not in shown[0]  # the notice does not repeat the link's text
    assert at.query_params[name] == DEFAULT_PARAMS[name]
    assert np.allclose(z_of(fig_by_title(at, "S = QKᵀ")), np.array(Q) @ np.array(K).T)
    assert not any("<b>" in m.value for m in at.markdown)


def test_one_bad_value_leaves_the_good_ones():
    at = open_link({**LINK, "v": "1 0\n0 x\n0.5 0.5", "hidden": "999"})
    assert_clean(at)
    assert sorted(notices(at)) == sorted(t("common.link_ignored", name=n) for n in ("v", "hidden"))
    assert by_key(at.text_area, "att_q").value == LINK["q"] and by_key(at.text_area, "att_k").value == LINK["k"]
    assert by_key(at.text_area, "att_v").value == wx.matrix_text(V)  # the default V: 3 × 3, fits 3 keys
    assert not at.error
    _, _, o = my_attention(LINK_Q, LINK_K, np.array(V), causal=True)
    assert np.allclose(z_of(fig_by_title(at, "O = AV")), o)
    assert at.slider(key="att_dk").value == 16 and at.slider(key="att_hidden").value == 16
    assert at.query_params["v"] == wx.matrix_text(V) and at.query_params["hidden"] == "16"


def test_a_link_whose_matrices_do_not_fit_together_shows_the_page_message():
    """Each matrix parses (the link is accepted) but Q and K differ in dₖ: the page's own error, as typed."""
    at = open_link({"q": LINK["q"], "hidden": "8"})
    assert_clean(at)
    assert not notices(at)
    assert at.error and "d_k" in at.error[0].value
    assert by_key(at.text_area, "att_q").value == LINK["q"]


def test_link_text_is_never_markdown():
    """Tokens are free text (kept as typed), but shown as text: no image, emphasis or html from a link."""
    hostile = "![i](http://127.0.0.1/x.png), **b**, <s>x</s>"
    at = open_link({"tokens_q": hostile, "tokens_k": "$x$, :red[y], `z`"})
    assert_clean(at)
    assert not notices(at)
    assert by_key(at.text_input, "att_tokens_q").value == hostile
    cell = next(m.value for m in at.markdown if m.value.startswith("**S["))
    assert cell.startswith(r"**S[!\[i\](http\:"), cell
    assert "![i](" not in cell and "<s>" not in cell
    for value in (m.value for m in at.markdown):
        assert "![i](http" not in value and "**b**" not in value and "$x$" not in value


def test_setting_widgets_writes_the_link():
    at = run_page("attention.py", "en")
    assert at.query_params["q"] == wx.matrix_text(Q) and at.query_params["dk"] == "64"
    by_key(at.text_area, "att_q").set_value("1 2 3\n4 5 6")
    by_key(at.text_input, "att_tokens_q").set_value("we, eat")
    by_key(at.toggle, "att_causal").set_value(True)
    at.slider(key="att_dk").set_value(5)
    at.slider(key="att_hidden").set_value(3)
    at.number_input(key="att_add_seed").set_value(7)
    at.run()
    assert_clean(at)
    at.segmented_control(key="att_stage").set_value("masked")
    by_key(at.selectbox, "att_row").set_value(1)
    at.run()
    q = at.query_params
    assert q["q"] == "1 2 3\n4 5 6" and q["tokens_q"] == "we, eat" and q["causal"] == "1"
    assert q["dk"] == "5" and q["hidden"] == "3" and q["add_seed"] == "7"
    assert q["stage"] == "masked" and q["row"] == "2"
    # a typed matrix that does not parse is still the learner's: kept and written, the page explains it
    by_key(at.text_area, "att_v").set_value("1 x").run()
    assert_clean(at)
    assert at.error and at.query_params["v"] == "1 x" and by_key(at.text_area, "att_v").value == "1 x"
    # the example's reset button still works, and the link follows it
    by_key(at.button, "att_reset").click().run()
    assert_clean(at)
    assert not at.error
    assert at.query_params["q"] == wx.matrix_text(Q) and at.query_params["v"] == wx.matrix_text(V)
    assert at.query_params["causal"] == "0" and at.query_params["stage"] == "raw"
    assert at.query_params["dk"] == "5"  # the reset is the example's, not the √dₖ section's


def test_a_link_applies_once_then_the_learner_sets():
    at = open_link({"dk": "16", "q": "1 0\n0 1\n1 1"})
    at.slider(key="att_dk").set_value(100).run()
    by_key(at.text_area, "att_q").set_value(Q3).run()
    assert_clean(at)
    assert at.slider(key="att_dk").value == 100 and at.query_params["dk"] == "100"
    assert by_key(at.text_area, "att_q").value == Q3 and at.query_params["q"] == Q3


def test_inputs_survive_another_page_and_a_language_switch():
    at = open_link(LINK)
    at.switch_page("../pages/multihead.py")
    at.run()
    assert "q" not in at.query_params  # the other page owns the link now
    at.session_state["lang"] = "ko"
    at.run()
    at.switch_page("../pages/attention.py")
    at.run()
    assert_clean(at)
    assert by_key(at.text_area, "att_q").value == LINK["q"] and at.slider(key="att_dk").value == 16
    assert by_key(at.toggle, "att_causal").value is True
    _, _, o = my_attention(LINK_Q, LINK_K, LINK_V, causal=True)
    assert np.allclose(z_of(fig_by_title(at, "O = AV")), o)
    assert at.query_params["q"] == LINK["q"] and at.query_params["lang"] == "ko"
