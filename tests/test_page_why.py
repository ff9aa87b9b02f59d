"""The why-self-attention page in both languages, driven through AppTest (tiny timings)."""
import math

from app.i18n import catalogue
from model.complexity import LAYERS
from tests.apptest_read import broken_emphasis, errors
from tests.apptest_util import assert_clean, run_page


def test_why_page_en():
    at = run_page("why.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Why self-attention"
    table = at.dataframe[0].value
    assert list(table["complexity per layer"]) == ["O(n²·d)", "O(n·d²)", "O(k·n·d²)", "O(r·n·d)"]
    assert list(table["= steps"]) == ["1", "100", "1", "1"]
    assert table["= operations"][0] == f"{100 * 100 * 512:.3g}"
    timing = at.dataframe[1].value
    assert list(timing["n"]) == [16, 64, 256]  # first view: small sizes, measured at once
    for col in timing.columns[1:4]:
        assert all(float(v) > 0 and math.isfinite(float(v)) for v in timing[col])
    # a new measurement through the form, then an invalid size list
    at.text_input(key="tm_ns").set_value("8, 32")
    at.select_slider(key="tm_d").set_value(32)
    at.button[0].click().run()
    assert_clean(at)
    assert list(at.dataframe[1].value["n"]) == [8, 32]
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
    assert ko.dataframe[0].value["= 스텝 수"][1] == "1e+07"
    layer_names = [catalogue("ko")[f"why.layers.{layer}"] for layer in LAYERS]
    assert layer_names == ["셀프 어텐션", "순환(RNN)", "합성곱(CNN)", "셀프 어텐션 (제한)"]
    assert list(ko.dataframe[0].value["레이어 종류"]) == layer_names
