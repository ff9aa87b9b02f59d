"""The training-recipe page in both languages, driven through AppTest."""
import numpy as np
import pytest

from model.schedule import noam_peak
from tests.apptest_read import broken_emphasis, errors, figures, metric, title, z_of
from tests.apptest_util import assert_clean, run_page


def test_recipe_page_en():
    at = run_page("recipe.py", "en")
    assert_clean(at)
    assert at.title[0].value == "Training recipe"
    table = at.dataframe[0].value
    assert len(table) == 3
    for _, row in table.iterrows():
        d, w = int(row["d_model"]), int(row["warmup"])
        assert int(row["peak step"]) == w == noam_peak(d, w)[0]
        assert float(row["peak learning rate"]) == pytest.approx(d ** -0.5 * w ** -0.5, rel=1e-4)
    assert "rate at step 100,000" in table.columns
    assert metric(at, "largest gap torch vs by-hand") < 1e-12
    assert metric(at, "first update |Δθ|") == pytest.approx(0.1, rel=1e-6)
    assert metric(at, "best confidence, found numerically") == pytest.approx(1 - 0.1 + 0.1 / 10, abs=1e-5)
    assert len(at.dataframe[1].value) == 5  # one row per Adam step
    # invalid list, a changed ε and V, and a gradient scale that does not change the first step
    at.text_input(key="sch_pairs").set_value("512, abc")
    at.slider(key="ls_eps").set_value(0.3)
    at.number_input(key="ls_V").set_value(5)
    at.select_slider(key="adam_c").set_value(1000.0)
    at.run()
    assert_clean(at)
    assert any("abc" in e for e in errors(at))
    assert len(at.dataframe[0].value) == 1  # the slider curve is still drawn
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
    row = at.dataframe[0].value.iloc[0]
    assert int(row["최고점 스텝"]) == 8000
    assert float(row["최고 학습률"]) == pytest.approx(1024 ** -0.5 * 8000 ** -0.5, rel=1e-4)
    assert any("나머지 토큰 39,988개" in c.value for c in at.caption)  # V beyond the 12 bars shown


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_dropout_section(lang, monkeypatch):
    """Issue 10: the intro promises dropout; the page now has a section on it, with a live mask."""
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
    at.slider(key="drop_p").set_value(0.5).run()
    assert_clean(at)
    scale = [m.value for m in at.metric if m.label == t("recipe.dropout.scale")]
    assert scale == ["2"] or scale == ["2.000"]
    seed = at.number_input(key="drop_seed").value
    at.button(key="drop_new_seed").click().run()
    assert_clean(at)
    assert at.number_input(key="drop_seed").value == seed + 1
    assert metric(at, t("recipe.dropout.zero_share", p=0.5)) != zero
