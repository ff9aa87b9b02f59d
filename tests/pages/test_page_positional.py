"""The positional-encoding page in both languages, driven through AppTest."""

import pytest
from app.i18n import LANGS
from streamlit.testing.v1 import AppTest

from app.i18n import catalogue
from tests.apptest_read import broken_emphasis, charts, errors, figures, metric, title, z_of
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util


@pytest.fixture(autouse=True)
def server_drawn_choices(monkeypatch):
    """The anchor, highlight, layer and head as Streamlit sliders (where the browser cannot answer them);
    tests/pages/test_page_positional_choices.py reads what the browser gets."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


@pytest.mark.slow
def test_positional_page_en():
    at = run_page("positional.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Positional encoding"
    assert metric(at, "max |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert metric(at, "same, all pairs") < 1e-11
    assert metric(at, "without PE") < 1e-5
    assert metric(at, "with PE") > 0.05
    heat = next(f for f in figures(at) if title(f).startswith("PE: 100 positions"))
    assert z_of(heat).size == 100 * 128
    # position 99 past max_len 50: the learned table's failed lookup is a labelled result, not an error box
    assert errors(at) == []
    assert any("row 99" in i.value and "IndexError" in i.value for i in at.info)
    assert any(s.value.startswith("Sinusoidal PE(99): defined") for s in at.success)
    # a different shift and pair, a shuffled Korean sentence with an emoji, bad dimension list
    at.number_input(key="rot_k").set_value(-37)
    at.slider(key="rot_i").set_value(10)
    at.text_input(key="perm_sentence").set_value("나는 너를 정말 사랑해 😀")
    at.radio(key="perm_order").set_value("shuffle")
    at.text_input(key="pe_dims").set_value("0, abc")
    at.run()
    assert_clean(at)
    assert metric(at, "max |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert metric(at, "without PE") < 1e-5 and metric(at, "with PE") > 0.05
    assert any("abc" in e for e in errors(at))
    # one word, then far too many words
    at.text_input(key="perm_sentence").set_value("alone").run()
    assert_clean(at)
    assert any("at least two words" in e for e in errors(at))
    at.text_input(key="perm_sentence").set_value(" ".join(f"w{i}" for i in range(64))).run()
    assert_clean(at)
    assert any("first 24 words" in w.value for w in at.warning)
    assert metric(at, "without PE") < 1e-5


@pytest.mark.slow
def test_positional_page_ko_and_sizes():
    at = run_page("positional.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "위치 인코딩"
    assert broken_emphasis(at) == []  # Korean particles after **bold** render
    assert catalogue("ko")["positional.permutation.orders.reverse"] in at.radio(key="perm_order").options
    at.slider(key="pe_len").set_value(512)
    at.slider(key="pe_d").set_value(512)
    at.text_input(key="perm_sentence").set_value("")
    at.number_input(key="ext_pos").set_value(10)
    at.run()
    assert_clean(at)
    assert any("비어" in e for e in errors(at))  # empty sentence: a message, in Korean
    assert metric(at, "최대 |M_k·PE(pos) − PE(pos+k)|") < 1e-12
    assert any("존재" in s.value for s in at.success)  # position 10 < max_len: the learned row exists


@pytest.mark.slow
@pytest.mark.parametrize("lang", list(LANGS))
def test_positional_waves_survive_a_smaller_d_model(lang):
    """The default dimensions 0, 1, 6, 20 made section 2 fail as soon as the d_model slider went
    below 21; now the missing dimensions are skipped with a warning and the others are plotted."""
    at = run_page("positional.py", lang)
    at.slider(key="pe_d").set_value(16).run()
    assert_clean(at)
    assert errors(at) == []  # the learned table's missing row 99 is shown as a result (st.info)
    assert any("20" in w.value and "15" in w.value for w in at.warning)
    waves = [c for c in charts(at) if "pe_waves" in c.id]
    assert len(waves[0].figure["data"]) == 3  # dimensions 0, 1, 6
    at.text_input(key="pe_dims").set_value("20, 30").run()  # nothing left to draw: a clear error
    assert_clean(at)
    assert any(("0" in e and "15" in e) for e in errors(at))
    at.text_input(key="pe_dims").set_value("600").run()  # beyond every d_model: still an error
    assert_clean(at)
    assert any("600" in e for e in errors(at))


# ----------------------------------------------------------------------------- links

def open_link(params: dict, file: str = "positional.py") -> AppTest:
    return apptest_util.open_link(file, params)


toasts = apptest_util.toasts


GOOD_LINK = {"length": "64", "d_model": "32", "dims": "0, 3, 9", "anchor": "10", "shift": "-7", "pair": "5",
             "highlight": "60", "max_len": "20", "position": "12", "sentence": "we like long walks",
             "order": "shuffle", "seed": "4", "layer": "2", "head": "3"}


@pytest.mark.slow
def test_a_good_link_opens_the_view_it_describes():
    at = open_link({**GOOD_LINK, "lang": "en"})
    assert_clean(at)
    assert toasts(at) == []
    assert at.slider(key="pe_len").value == 64 and at.slider(key="pe_d").value == 32
    assert at.text_input(key="pe_dims").value == "0, 3, 9"
    assert at.slider(key="pe_anchor").value == 10
    assert at.number_input(key="rot_k").value == -7
    assert at.slider(key="rot_i").value == 5 and at.slider(key="rot_p").value == 60
    assert at.slider(key="ext_len").value == 20 and at.number_input(key="ext_pos").value == 12
    assert at.text_input(key="perm_sentence").value == "we like long walks"
    assert at.radio(key="perm_order").value == "shuffle"
    assert at.number_input(key="perm_seed").value == 4
    assert at.slider(key="perm_layer").value == 2 and at.slider(key="perm_head").value == 3
    # what they drive: the heatmap's size, the waves drawn, the rotation pair, the lookup, the attention maps
    heat = next(f for f in figures(at) if title(f).startswith("PE: 64 positions × 32 dimensions"))
    assert z_of(heat).size == 64 * 32
    waves = [c for c in charts(at) if "pe_waves" in c.id]
    assert len(waves[0].figure["data"]) == 3
    assert any(title(f).startswith("Dot product with position p = 10") for f in figures(at))
    assert any(title(f).startswith("Pair 5:") and "k = -7" in title(f) and "+-" not in title(f) for f in figures(at))
    assert metric(at, "max |M_k·PE(pos) − PE(pos+k)|, pair 5, 64 positions") < 1e-12
    assert any("PE(12)" in s.value for s in at.success) and errors(at) == []  # 12 < max_len 20: the row exists
    assert any("Layer 2, head 3." in c.value for c in at.caption)
    assert metric(at, "without PE") < 1e-5 and metric(at, "with PE") > 0.05
    # the address still describes the view (and nothing else was added to it)
    assert {k: at.query_params[k] for k in GOOD_LINK} == GOOD_LINK


@pytest.mark.slow
def test_a_link_in_korean_keeps_its_language_and_values():
    at = open_link({"lang": "ko", "length": "40", "order": "rotate"})
    assert_clean(at)
    assert at.title[0].value == "위치 인코딩"
    assert at.slider(key="pe_len").value == 40
    assert at.radio(key="perm_order").value == "rotate"
    assert at.query_params["lang"] == "ko"


BAD_LINK = {"length": "<b>x</b>", "d_model": "130", "dims": "0, abc", "anchor": "1e3", "shift": "1.5",
            "pair": "500", "highlight": "-1", "max_len": "", "position": "nan",
            "sentence": "a" * 100_000, "order": "sideways", "seed": "9" * 30, "layer": "9", "head": "0"}


@pytest.mark.slow
def test_bad_link_values_fall_back_to_the_defaults_with_a_notice():
    at = open_link({**BAD_LINK, "lang": "en"})
    assert_clean(at)
    notices = toasts(at)
    for name in BAD_LINK:
        assert sum(f"“{name}”" in n for n in notices) == 1, (name, notices)
    assert not any("<b>" in n or "aaaa" in n for n in notices)  # a notice names the parameter, never its text
    defaults = {"pe_len": 100, "pe_d": 128, "pe_anchor": 50, "rot_i": 0, "rot_p": 3, "ext_len": 50, "perm_layer": 1,
                "perm_head": 1}
    for key, value in defaults.items():
        assert at.slider(key=key).value == value, key
    assert at.number_input(key="rot_k").value == 5 and at.number_input(key="ext_pos").value == 99
    assert at.number_input(key="perm_seed").value == 0
    assert at.text_input(key="pe_dims").value == "0, 1, 6, 20"
    assert at.text_input(key="perm_sentence").value == "I love you"
    assert at.radio(key="perm_order").value == "reverse"
    heat = next(f for f in figures(at) if title(f).startswith("PE: 100 positions"))
    assert z_of(heat).size == 100 * 128
    # the address now describes what is shown
    assert at.query_params["length"] == "100" and at.query_params["sentence"] == "I love you"
    assert at.query_params["order"] == "reverse" and at.query_params["layer"] == "1"


@pytest.mark.slow
def test_link_values_that_only_fit_other_inputs_fall_back():
    """pair 40 fits d_model 128 but not the linked d_model 32; highlight/anchor 90 fit 100 positions, not 64."""
    at = open_link({"d_model": "32", "length": "64", "pair": "40", "highlight": "90", "anchor": "90", "dims": "600"})
    assert_clean(at)
    notices = toasts(at)
    for name in ("pair", "highlight", "anchor", "dims"):
        assert any(f"“{name}”" in n for n in notices), (name, notices)
    assert not any("“d_model”" in n or "“length”" in n for n in notices)
    assert at.slider(key="pe_d").value == 32 and at.slider(key="pe_len").value == 64
    assert at.slider(key="rot_i").value == 0 and at.slider(key="rot_p").value == 3
    assert at.slider(key="pe_anchor").value == 50  # the first view's anchor still fits 64 positions
    short = open_link({"length": "40", "anchor": "45"})
    assert_clean(short)
    assert any("“anchor”" in n for n in toasts(short))
    assert short.slider(key="pe_anchor").value == 20  # a shorter table: its middle


@pytest.mark.slow
def test_reset_this_page_restores_the_first_view():
    at = run_page("positional.py", "en")
    at.slider(key="pe_len").set_value(300).run()
    at.slider(key="pe_anchor").set_value(250)
    at.radio(key="perm_order").set_value("rotate")
    at.run()
    at.slider(key="pe_len").set_value(120).run()  # the anchor 250 is past the table: the last position
    assert at.slider(key="pe_anchor").value == 119
    at.slider(key="pe_anchor").set_value(110).run()
    at.button(key="reset_page").click().run()
    assert_clean(at)
    assert at.slider(key="pe_len").value == 100 and at.slider(key="pe_anchor").value == 50
    assert at.radio(key="perm_order").value == "reverse"
    assert at.query_params["length"] == "100" and at.query_params["anchor"] == "50"


@pytest.mark.slow
def test_widget_changes_are_written_to_the_address():
    at = run_page("positional.py", "en")
    assert at.query_params["length"] == "100" and at.query_params["pair"] == "0"
    at.slider(key="pe_len").set_value(200)
    at.slider(key="pe_d").set_value(64)
    at.text_input(key="pe_dims").set_value("1, 2")
    at.number_input(key="rot_k").set_value(-3)
    at.number_input(key="ext_pos").set_value(7)
    at.text_input(key="perm_sentence").set_value("a b c")
    at.radio(key="perm_order").set_value("rotate")
    at.run()
    assert_clean(at)
    at.slider(key="rot_p").set_value(150)
    at.slider(key="rot_i").set_value(31)
    at.slider(key="pe_anchor").set_value(180)
    at.slider(key="perm_head").set_value(4)
    at.run()
    assert_clean(at)
    expected = {"length": "200", "d_model": "64", "dims": "1, 2", "shift": "-3", "position": "7",
                "sentence": "a b c", "order": "rotate", "highlight": "150", "pair": "31", "anchor": "180", "head": "4"}
    assert {k: at.query_params[k] for k in expected} == expected
    # a shorter length: the highlighted position 150 no longer exists; the nearest that does is shown
    at.slider(key="pe_len").set_value(100).run()
    assert_clean(at)
    assert at.slider(key="rot_p").value == 99 and at.query_params["highlight"] == "99"
    assert at.slider(key="pe_anchor").value == 99 and at.query_params["anchor"] == "99"
    # that address, opened elsewhere, shows the same inputs
    again = open_link(dict(at.query_params))
    assert_clean(again)
    assert toasts(again) == []
    for key in ("pe_len", "pe_d", "rot_p", "rot_i", "pe_anchor", "perm_head"):
        assert again.slider(key=key).value == at.slider(key=key).value, key
    assert again.text_input(key="perm_sentence").value == "a b c"
    assert again.radio(key="perm_order").value == "rotate"
