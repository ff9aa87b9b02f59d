"""The positional-encoding page in both languages, driven through AppTest."""
import json

import pytest

from app.i18n import catalogue
from tests.apptest_read import broken_emphasis, errors, figures, metric, title, z_of
from tests.apptest_util import assert_clean, run_page


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
@pytest.mark.parametrize("lang", ["en", "ko"])
def test_positional_waves_survive_a_smaller_d_model(lang):
    """The default dimensions 0, 1, 6, 20 made section 2 fail as soon as the d_model slider went
    below 21; now the missing dimensions are skipped with a warning and the others are plotted."""
    at = run_page("positional.py", lang)
    at.slider(key="pe_d").set_value(16).run()
    assert_clean(at)
    assert errors(at) == []  # the learned table's missing row 99 is shown as a result (st.info)
    assert any("20" in w.value and "15" in w.value for w in at.warning)
    waves = [c for c in at.get("plotly_chart") if "pe_waves" in c.proto.id]
    assert len(json.loads(waves[0].proto.spec)["data"]) == 3  # dimensions 0, 1, 6
    at.text_input(key="pe_dims").set_value("20, 30").run()  # nothing left to draw: a clear error
    assert_clean(at)
    assert any(("0" in e and "15" in e) for e in errors(at))
    at.text_input(key="pe_dims").set_value("600").run()  # beyond every d_model: still an error
    assert_clean(at)
    assert any("600" in e for e in errors(at))
