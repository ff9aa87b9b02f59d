"""The training-recipe page in both languages, driven through AppTest."""
import numpy as np
import pytest
from app.i18n import LANGS

from model.training.schedule import noam_peak
from tests.apptest_read import broken_emphasis, errors, figures, metric, tables, title, z_of
from tests.apptest_util import assert_clean, run_page
from tests import apptest_util


@pytest.fixture(autouse=True)
def server_drawn_rate(monkeypatch):
    """The dropout rate as a Streamlit slider (where the browser cannot answer it): the server's path is the subject
    here; tests/pages/test_page_recipe_choices.py covers the browser's answer."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")


def test_recipe_page_en():
    at = run_page("recipe.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Training recipe"
    table = tables(at)[0]
    assert len(table) == 3
    for _, row in table.iterrows():
        d, w = int(row["d_model"]), int(row["warmup"])
        assert int(row["peak step"]) == w == noam_peak(d, w)[0]
        assert float(row["peak learning rate"]) == pytest.approx(d ** -0.5 * w ** -0.5, rel=1e-4)
    assert "rate at step 100,000" in table.columns
    assert metric(at, "largest gap torch vs by-hand") < 1e-12
    assert metric(at, "first update |Δθ|") == pytest.approx(0.1, rel=1e-6)
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.1 + 0.1 / 10, abs=1e-5)
    assert len(tables(at)[1]) == 5  # one row per Adam step
    # invalid list, a changed ε and V, and a gradient scale that does not change the first step
    at.text_input(key="sch_pairs").set_value("512, abc")
    at.slider(key="ls_eps").set_value(0.3)
    at.number_input(key="ls_V").set_value(5)
    at.select_slider(key="adam_c").set_value(1000.0)
    at.run()
    assert_clean(at)
    assert any("abc" in e for e in errors(at))
    assert len(tables(at)[0]) == 1  # the slider curve is still drawn
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.3 + 0.3 / 5, abs=1e-5)
    assert metric(at, "first update |Δθ|") == pytest.approx(0.1, rel=1e-6)
    at.text_input(key="sch_pairs").set_value("1e30, 4000; 512 8000").run()
    assert_clean(at)
    assert any("outside" in e or "too large" in e for e in errors(at))


def test_recipe_page_ko():
    at = run_page("recipe.py", "ko")
    assert_clean(at)
    assert at.title[0].value == "학습 레시피"
    assert broken_emphasis(at) == []  # Korean particles after **bold** render
    at.slider(key="sch_d").set_value(1024)
    at.slider(key="sch_w").set_value(8000)
    at.number_input(key="ls_V").set_value(40_000)
    at.run()
    assert_clean(at)
    row = tables(at)[0].iloc[0]
    assert int(row["최고점 스텝"]) == 8000
    assert float(row["최고 학습률"]) == pytest.approx(1024 ** -0.5 * 8000 ** -0.5, rel=1e-4)
    assert any("나머지 토큰 39,988개" in c.value for c in at.caption)  # V beyond the 12 bars shown


@pytest.mark.parametrize("lang", list(LANGS))
def test_dropout_section(lang, monkeypatch):
    """The intro promises dropout; the page now has a section on it, with a live mask."""
    from app.i18n import t
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    at = run_page("recipe.py", lang)
    assert_clean(at)
    headers = [h.value for h in at.header]
    assert any(h.startswith("4.") and ("Dropout" in h or "드롭아웃" in h) for h in headers), headers
    text = "\n".join(m.value for m in at.markdown)
    for fragment in (("P_drop = 0.1", "0.3", "English–French", "English–German") if lang == "en"
                     else ("P_drop = 0.1", "0.3", "영어–프랑스어", "영어–독일어")):
        assert fragment in text
    zero = metric(at, t("recipe.dropout.zero_share", p=0.1))
    assert abs(zero - 0.1) < 0.05
    before = next(f for f in figures(at) if title(f).startswith(t("recipe.dropout.before_title", shown=12, width=64)))
    after = next(f for f in figures(at) if title(f).startswith(t("recipe.dropout.after_title", p=0.1, seed=0)))
    zeroed = z_of(after) == 0
    assert zeroed.any() and np.allclose(z_of(after)[~zeroed], z_of(before)[~zeroed] / 0.9, rtol=1e-4, atol=1e-6)
    at.select_slider(key="drop_p").set_value(0.5).run()
    assert_clean(at)
    scale = [m.value for m in at.metric if m.label == t("recipe.dropout.scale")]
    assert scale == ["2"] or scale == ["2.000"]
    seed = at.number_input(key="drop_seed").value
    at.button(key="drop_new_seed").click().run()
    assert_clean(at)
    assert at.number_input(key="drop_seed").value == seed + 1
    assert metric(at, t("recipe.dropout.zero_share", p=0.5)) != zero


# ---------------------------------------------------------------- links and kept inputs

def open_link(params: dict, lang: str = "en"):
    return apptest_util.open_link("recipe.py", params, lang)


toasts = apptest_util.toasts


GOOD_LINK = {"d_model": "256", "warmup": "2000", "range": "1,50000", "pairs": "", "log": "1", "theta": "2",
             "scale": "10", "lr": "0.01", "steps": "7", "eps": "0.2", "vocab": "5",
             "sentence": "the boy eats an apple", "p_drop": "0.5", "seed": "3"}


def test_a_link_opens_the_view_it_describes():
    at = open_link(GOOD_LINK)
    assert_clean(at)
    assert not toasts(at)
    assert (at.slider(key="sch_d").value, at.slider(key="sch_w").value) == (256, 2000)
    assert at.slider(key="sch_range").value == (1, 50_000)
    assert at.text_input(key="sch_pairs").value == "" and at.checkbox(key="sch_log").value is True
    assert at.number_input(key="adam_theta").value == 2.0
    assert (at.select_slider(key="adam_c").value, at.select_slider(key="adam_lr").value) == (10.0, 0.01)
    assert at.slider(key="adam_steps").value == 7
    assert (at.slider(key="ls_eps").value, at.number_input(key="ls_V").value) == (0.2, 5)
    assert at.text_input(key="drop_sentence").value == "the boy eats an apple"
    assert (at.select_slider(key="drop_p").value, at.number_input(key="drop_seed").value) == (0.5, 3)
    # the numbers they drive
    table = tables(at)[0]
    assert len(table) == 1 and int(table.iloc[0]["peak step"]) == 2000
    assert float(table.iloc[0]["peak learning rate"]) == pytest.approx(256 ** -0.5 * 2000 ** -0.5, rel=1e-4)
    assert "rate at step 50,000" in table.columns
    assert len(tables(at)[1]) == 7  # Adam steps
    assert metric(at, "first update |Δθ|") == pytest.approx(0.01, rel=1e-6)
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.2 + 0.2 / 5, abs=1e-5)
    assert any(title(f).startswith("Dropout(y), P_drop = 0.5, seed 3") for f in figures(at))
    assert metric(at, "kept entries × 1/(1 − P_drop)") == pytest.approx(2.0)


BAD_LINK = {"d_model": "<b>x</b>", "warmup": "150", "range": "5,1", "pairs": "abc", "log": "maybe",
            "theta": "1e400", "scale": "3", "lr": "0.2", "steps": "99", "eps": "0.9", "vocab": "1",
            "sentence": "z" * 100_000, "p_drop": "<b>0.5</b>", "seed": "-1"}


def test_bad_link_values_fall_back_to_the_defaults_with_a_notice():
    fresh = run_page("recipe.py", "en")
    at = open_link(BAD_LINK)
    assert_clean(at)
    shown = toasts(at)
    for name in BAD_LINK:
        assert any(f"“{name}”" in s for s in shown), (name, shown)
    assert all("<b>" not in s and "zzzz" not in s for s in shown)
    for kind, key in (("slider", "sch_d"), ("slider", "sch_w"), ("slider", "sch_range"), ("text_input", "sch_pairs"),
                      ("checkbox", "sch_log"), ("number_input", "adam_theta"), ("select_slider", "adam_c"),
                      ("select_slider", "adam_lr"), ("slider", "adam_steps"), ("slider", "ls_eps"),
                      ("number_input", "ls_V"), ("text_input", "drop_sentence"), ("select_slider", "drop_p"),
                      ("number_input", "drop_seed")):
        assert getattr(at, kind)(key=key).value == getattr(fresh, kind)(key=key).value, key
    assert [d.to_dict() for d in tables(at)[:2]] == [d.to_dict() for d in tables(fresh)[:2]]
    assert at.query_params["d_model"] == "512" and at.query_params["seed"] == "0"
    assert not any("<b>" in m.value for m in at.markdown)


def test_widget_changes_are_written_to_the_link():
    at = run_page("recipe.py", "en")
    assert at.query_params["d_model"] == "512" and at.query_params["eps"] == "0.1"
    at.slider(key="sch_d").set_value(1024)
    at.text_input(key="sch_pairs").set_value("256, 2000")
    at.checkbox(key="sch_log").check()
    at.select_slider(key="adam_lr").set_value(0.5)
    at.slider(key="ls_eps").set_value(0.25)
    at.number_input(key="ls_V").set_value(40)
    at.text_input(key="drop_sentence").set_value("we eat rice")
    at.run()
    assert_clean(at)
    at.button(key="drop_new_seed").click().run()
    assert_clean(at)
    q = at.query_params
    assert (q["d_model"], q["pairs"], q["log"], q["lr"]) == ("1024", "256, 2000", "1", "0.5")
    assert (q["eps"], q["vocab"], q["sentence"], q["seed"]) == ("0.25", "40", "we eat rice", "1")
