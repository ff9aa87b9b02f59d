"""app/state.py: how values travel in links, what fits an input, and the whole mechanism through AppTest
(kept across pages, reset per page, links owned by the page being viewed)."""
import pytest
from streamlit.testing.v1 import AppTest

from app.state import MAX_URL_TEXT, BadValue, OneBased, between, decode, encode, fits
from tests.apptest_util import MAIN, assert_clean, run_page


@pytest.mark.parametrize("value", [0, 7, -3, 2.5, 1e-4, True, False, "a sentence, with commas", (1, 100_000),
                                   [0, 2, 3], [], "", "<b>x</b>"])
def test_values_survive_a_round_trip_through_a_link(value):
    like = value if not isinstance(value, list) or value else []
    assert decode(encode(value), like) == value


@pytest.mark.parametrize("text, like", [("abc", 0), ("1.5", 0), ("nan", 1.0), ("inf", 1.0), ("maybe", True),
                                        ("1,2,3", (1, 2)), ("x" * (MAX_URL_TEXT + 1), ""), ("9" * 30, 0),
                                        ("1,x", [0])])
def test_malformed_link_values_are_refused(text, like):
    with pytest.raises(BadValue):
        decode(text, like)


def test_what_fits():
    assert fits(3, range(1, 5)) and not fits(5, range(1, 5))
    assert fits("cross", ["encoder_self", "cross"]) and not fits("<script>", ["cross"])
    assert fits([0, 2], range(4)) and not fits([0, 9], range(4))
    assert fits((1, 10), between(1, 10)) and not fits((0, 10), between(1, 10))
    assert fits(0.5, between(0, 1)) and not fits("0.5", between(0, 1))
    assert fits(anything := object(), None) and anything
    assert not fits(1, lambda v: 1 / 0)  # a predicate that fails refuses
    assert fits({"a": 1}["a"], {1: "one"})


def test_layers_and_heads_are_one_based_in_links():
    assert [OneBased.encode(v) for v in (0, 1, -1)] == ["1", "2", "mean"]
    assert [OneBased.decode(s, 0) for s in ("1", "2", "mean", "MEAN")] == [0, 1, -1, -1]


def test_inputs_are_kept_across_pages_and_reset_per_page():
    """Set inputs on the multi-head page, visit another page and switch the language, come back: the values
    are there; "reset this page" restores the defaults and clears the page's link, not another page's values."""
    at = run_page("multihead.py", "en")
    at.text_input(key="mh_sentence").set_value("one two three four").run()
    at.select_slider(key="mh_d").set_value(128).run()
    at.toggle(key="mh_pe").set_value(False).run()
    assert at.query_params["d_model"] == "128" and at.query_params["positions"] == "0"
    at.switch_page("../pages/why.py").run()
    assert "d_model" not in at.query_params, "another page does not carry this page's link"
    at.number_input(key="cx_n").set_value(400).run()
    at.radio(key="lang").set_value("ko").run()
    at.switch_page("../pages/multihead.py").run()
    assert_clean(at)
    assert at.text_input(key="mh_sentence").value == "one two three four"
    assert at.select_slider(key="mh_d").value == 128 and at.toggle(key="mh_pe").value is False
    at.button(key="reset_page").click().run()
    assert_clean(at)
    assert at.select_slider(key="mh_d").value == 64 and at.toggle(key="mh_pe").value is True
    assert at.text_input(key="mh_sentence").value != "one two three four"  # the default sentence (Korean now)
    assert at.query_params["lang"] == "ko" and at.query_params["d_model"] == "64"
    at.switch_page("../pages/why.py").run()
    assert at.number_input(key="cx_n").value == 400, "reset touches only the page it is on"


def test_a_link_applies_once_then_the_learner_decides():
    """The link seeds the page; the learner's next change is not overwritten by the link on the next run."""
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.query_params.update({"d_model": "256", "lang": "en"})
    at.switch_page("../pages/multihead.py")
    at.run()
    assert at.select_slider(key="mh_d").value == 256
    at.select_slider(key="mh_d").set_value(32).run()
    at.text_input(key="mh_sentence").set_value("a b").run()
    assert at.select_slider(key="mh_d").value == 32 and at.query_params["d_model"] == "32"


def test_every_run_sends_the_link_to_the_browser_at_most_once(monkeypatch):
    """The whole class of runs that write the address bar parameter by parameter: each write was a message
    to the browser, and each message there a new entry in the browser's history and a re-render of the whole
    app (opening the attention page wrote 16 after clearing the last page's: 17 presses of Back to leave it,
    and 70-130 ms of the browser's work). One run (a page's first open, a control, a language switch, "reset
    this page") sends the link once, with every parameter in it."""
    from streamlit.runtime.state.query_params import QueryParams

    from app.pages_list import PAGES
    sent = []
    real = QueryParams._send_query_param_msg
    monkeypatch.setattr(QueryParams, "_send_query_param_msg", lambda self: (sent.append(1), real(self))[1])
    at = run_page(None, "en")
    assert len(sent) <= 1
    for info in PAGES[1:]:
        sent.clear()
        at.switch_page(f"../pages/{info.file}")
        at.run()
        assert_clean(at)
        assert len(sent) <= 1, f"opening {info.file} sent the link {len(sent)} times"
    sent.clear()
    at.session_state["lang"] = "ko"
    at.run()
    assert len(sent) <= 1, f"a language switch sent the link {len(sent)} times"
    sent.clear()
    at.button(key="reset_page").click().run()
    assert len(sent) <= 1, f"resetting the page sent the link {len(sent)} times"
    assert at.query_params["lang"] == "ko"
