"""The why-self-attention page in both languages, driven through AppTest (tiny timings)."""
import math

import pytest
from streamlit.testing.v1 import AppTest

from app.i18n import catalogue
from model.lessons.complexity import LAYERS
from tests.apptest_read import broken_emphasis, errors, figures, tables, title
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util


@pytest.fixture(autouse=True)
def server_drawn_k(monkeypatch):
    """The kernel width k as a Streamlit slider (where the browser cannot answer it): the server's path is the subject
    here; tests/pages/test_page_why_choices.py covers the browser's answer."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


def test_why_page_en():
    at = run_page("why.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Why self-attention"
    table = tables(at)[0]
    assert list(table["complexity per layer"]) == ["O(n²·d)", "O(n·d²)", "O(k·n·d²)", "O(r·n·d)"]
    assert [str(v) for v in table["= steps"]] == ["1", "100", "1", "1"]
    assert table["= operations"][0] == f"{100 * 100 * 512:.3g}"
    timing = tables(at)[1]
    assert list(timing["n"]) == [16, 64, 256]  # first view: small sizes, measured at once
    for col in timing.columns[1:4]:
        assert all(float(v) > 0 and math.isfinite(float(v)) for v in timing[col])
    # a new measurement through the form, then an invalid size list
    at.text_input(key="tm_ns").set_value("8, 32")
    at.select_slider(key="tm_d").set_value(32)
    at.button[0].click().run()
    assert_clean(at)
    assert list(tables(at)[1]["n"]) == [8, 32]
    at.text_input(key="tm_ns").set_value("16, abc")
    at.button[0].click().run()
    assert_clean(at)
    assert any("abc" in e for e in errors(at))


def test_why_page_ko():
    ko = run_page("why.py", "ko")
    assert_clean(ko)
    assert ko.title[0].value == "왜 셀프 어텐션인가"
    assert broken_emphasis(ko) == []  # Korean particles after **bold** render
    ko.number_input(key="cx_n").set_value(10_000_000).run()
    assert_clean(ko)
    assert tables(ko)[0]["= 스텝 수"][1] == "1e+07"
    layer_names = [catalogue("ko")[f"why.layers.{layer}"] for layer in LAYERS]
    assert layer_names == ["셀프 어텐션", "순환(RNN)", "합성곱(CNN)", "셀프 어텐션 (제한)"]
    assert list(tables(ko)[0]["레이어 종류"]) == layer_names


# ----------------------------------------------------------------------------- links

def open_link(params: dict) -> AppTest:
    return apptest_util.open_link("why.py", params)


toasts = apptest_util.toasts


GOOD_LINK = {"n": "2000", "d": "64", "k": "5", "r": "7", "time_n": "8, 32", "time_d": "128", "batch": "3",
             "repeats": "2", "recurrent": "lstm"}


def test_a_good_link_opens_the_view_it_describes():
    at = open_link({**GOOD_LINK, "lang": "en"})
    assert_clean(at)
    assert toasts(at) == []
    assert at.number_input(key="cx_n").value == 2000 and at.number_input(key="cx_d").value == 64
    assert at.slider(key="cx_k").value == 5 and at.slider(key="cx_r").value == 7
    table = tables(at)[0]
    assert table["= operations"][0] == f"{2000 * 2000 * 64:.3g}"  # n²·d at the linked n and d
    assert list(table["= steps"]) == ["1", "2,000", "1", "1"]
    assert any("d = 64, k = 5, r = 7" in title(f) for f in figures(at))
    # the timing form is filled in; measuring waits for the learner's click
    assert at.text_input(key="tm_ns").value == "8, 32"
    assert at.select_slider(key="tm_d").value == 128
    assert at.slider(key="tm_b").value == 3 and at.slider(key="tm_rep").value == 2
    assert at.radio(key="tm_rnn").value == "lstm"
    assert list(tables(at)[1]["n"]) == [16, 64, 256]  # the first view, until "measure"
    at.button[0].click().run()
    assert_clean(at)
    assert list(tables(at)[1]["n"]) == [8, 32]
    assert any("LSTM" in name for f in figures(at) for name in (tr.get("name", "") for tr in f["data"]))
    assert {k: at.query_params[k] for k in GOOD_LINK} == GOOD_LINK


BAD_LINK = {"n": "0", "d": "<b>x</b>", "k": "65", "r": "a" * 100_000, "time_n": "16, abc", "time_d": "100",
            "batch": "9", "repeats": "1.5", "recurrent": "rnn"}


def test_bad_link_values_fall_back_to_the_defaults_with_a_notice():
    at = open_link({**BAD_LINK, "lang": "ko"})
    assert_clean(at)
    notices = toasts(at)
    for name in BAD_LINK:
        assert sum(f"“{name}”" in n for n in notices) == 1, (name, notices)
    assert not any("<b>" in n or "aaaa" in n for n in notices)  # a notice names the parameter, never its text
    assert at.number_input(key="cx_n").value == 100 and at.number_input(key="cx_d").value == 512
    assert at.slider(key="cx_k").value == 3 and at.slider(key="cx_r").value == 16
    assert at.text_input(key="tm_ns").value == "16, 64, 256, 1024"
    assert at.select_slider(key="tm_d").value == 64
    assert at.slider(key="tm_b").value == 2 and at.slider(key="tm_rep").value == 3
    assert at.radio(key="tm_rnn").value == "gru"
    assert str(tables(at)[0]["= 스텝 수"][1]) == "100"
    assert at.query_params["n"] == "100" and at.query_params["r"] == "16" and at.query_params["recurrent"] == "gru"


def test_widget_changes_are_written_to_the_address():
    at = run_page("why.py", "en")
    assert at.query_params["n"] == "100" and at.query_params["time_n"] == "16, 64, 256, 1024"
    at.number_input(key="cx_n").set_value(777)
    at.number_input(key="cx_d").set_value(32)
    at.slider(key="cx_k").set_value(9)
    at.slider(key="cx_r").set_value(100)
    at.run()
    assert_clean(at)
    assert {k: at.query_params[k] for k in ("n", "d", "k", "r")} == {"n": "777", "d": "32", "k": "9", "r": "100"}
    # the form's inputs reach the address when the form is sent
    at.text_input(key="tm_ns").set_value("4, 8")
    at.select_slider(key="tm_d").set_value(32)
    at.radio(key="tm_rnn").set_value("lstm")
    at.button[0].click().run()
    assert_clean(at)
    assert at.query_params["time_n"] == "4, 8" and at.query_params["time_d"] == "32"
    assert at.query_params["recurrent"] == "lstm"
    again = open_link(dict(at.query_params))
    assert_clean(again)
    assert toasts(again) == []
    assert again.number_input(key="cx_n").value == 777 and again.slider(key="cx_r").value == 100
    assert again.text_input(key="tm_ns").value == "4, 8" and again.radio(key="tm_rnn").value == "lstm"
