"""The multi-head attention page (its numbers come from model/lessons/multihead.py, tested in
tests/model/test_lesson_multihead.py)."""
from __future__ import annotations

import csv
import io

import numpy as np
import pytest
from app.i18n import LANGS

from app.charts.export import heads_csv
from app.fast import attention_view as av
from app.i18n import catalogue, fill
from tests.apptest_read import attention_views, charts, figures, rendered_text, tables, title
from tests.apptest_util import assert_clean, run_page

SHAPE_COL = {"en": "shape (this run)", "ko": "모양 (이번 실행)"}


def shapes_shown(at, lang="en") -> list[str]:
    return list(tables(at)[0][SHAPE_COL[lang]])


def expected_shapes(L, D, H) -> list[str]:
    dh = D // H
    return [str(s) for s in ([1, L, D], [1, L, D], [1, L, D], [1, L, D], [1, L, H, dh], [1, H, L, dh],
                             [1, H, L, L], [1, H, L, L], [1, H, L, dh], [1, L, D], [1, L, D])]


def heads_view(at) -> tuple[dict, np.ndarray]:
    """The attention view of section 3: its one kind's header, and its maps as (H, L, L) weights."""
    (data,) = attention_views(at)
    header, weights = av.read_payload(data)
    (kind,) = header["kinds"]
    assert kind["layers"] == 1
    return kind, weights.reshape(kind["heads"], kind["nq"], kind["nk"])


def run_with(lang="en", **state):
    def setup(at):
        for k, v in state.items():
            at.session_state[k] = v
    return run_page("multihead.py", lang, setup=setup)


# ---------------------------------------------------------------- the page

@pytest.mark.parametrize("lang", list(LANGS))
def test_default_page_shapes(lang):
    at = run_with(lang, mh_sentence="the cat sat on the mat")
    assert_clean(at)
    assert not at.error
    assert shapes_shown(at, lang) == expected_shapes(6, 64, 8)
    assert len(figures(at)) == 2 + 1  # single head vs mean of heads, one layer's vector lengths
    kind, maps = heads_view(at)  # every head's map, in the attention view
    assert kind["heads"] == 8 and kind["q"] == kind["k"] == "the cat sat on the mat".split()
    assert kind["label"] == fill(catalogue(lang)["multihead.maps.kind"], {"H": 8}) and not kind["causal"]
    np.testing.assert_allclose(maps.sum(-1), 1.0, atol=6 / av.SCALE)
    assert len(at.get("download_button")) == len(charts(at)) + 1  # every head's weights, beside the view
    cost = tables(at)[1]
    assert list(cost["H"]) == [1, 2, 4, 8, 16, 32, 64]
    assert cost.iloc[:, 7].nunique() == 1  # matmul total is the same for every H
    assert cost.iloc[:, -1].nunique() == 1  # and so is the parameter count


def test_changing_d_and_h_changes_the_shapes():
    at = run_with(mh_sentence="나는 학교에 간다 🙂")
    at.select_slider(key="mh_d").set_value(48)
    at.run()
    assert_clean(at)
    h_box = at.selectbox(key="mh_h")
    assert list(h_box.options) == [str(h) for h in (1, 2, 3, 4, 6, 8, 12, 16, 24, 48)]
    h_box.set_value(12)
    at.run()
    assert_clean(at)
    assert shapes_shown(at) == expected_shapes(4, 48, 12)
    kind, _ = heads_view(at)
    assert kind["heads"] == 12 and kind["q"] == ["나는", "학교에", "간다", "🙂"]
    at.selectbox(key="mh_h").set_value(24)
    at.run()
    assert_clean(at)
    assert heads_view(at)[0]["heads"] == 24
    assert "mh_pick" not in [box.key for box in at.selectbox]  # the view picks the head, in the browser
    assert len(figures(at)) == 3  # no server-drawn grid of the heads, nor one of them enlarged


@pytest.mark.parametrize("lang", list(LANGS))
@pytest.mark.parametrize("sentence, d, h", [("the cat sat on the mat", 64, 8), ("a dog", 64, 1)])  # top 0.49 and 1
def test_the_view_holds_the_heads_the_model_computes_and_stretches_small_weights(lang, sentence, d, h):
    from app.charts.heatmaps import scale_top
    from model.lessons.multihead import multihead_demo
    words = sentence.split()
    at = run_with(lang, mh_sentence=sentence, mh_d=d, mh_h=h, mh_seed=3)
    assert_clean(at)
    kind, maps = heads_view(at)
    expected = multihead_demo(words, d, h, 3, positions=True).weights
    np.testing.assert_allclose(maps, expected, atol=0.5 / av.SCALE + 1e-9)
    top = scale_top(expected)  # every weight below 0.5: the darkest colour at the largest weight, rounded up
    assert kind["top"] == top and (top < 1) is (float(expected.max()) < 0.5)
    said = fill(catalogue(lang)["multihead.maps.scale_top"], {"top": top})
    assert (said in [c.value for c in at.caption]) is (top < 1)


def test_the_view_opens_on_the_head_a_link_names_and_refuses_one_the_model_lacks():
    from tests.apptest_util import open_link
    at = open_link("multihead.py", {"heads": "8", "head": "3"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    assert av.read_payload(data)[0]["initial"] == {"kind": "self", "layer": 1, "head": 3, "query": 0}
    at = open_link("multihead.py", {"heads": "8", "head": "9"}, lang="en")
    assert_clean(at)
    (data,) = attention_views(at)
    assert av.read_payload(data)[0]["initial"]["head"] == 1
    assert any("“head”" in toast.value for toast in at.toast)


def test_without_the_view_the_server_draws_the_tiles(monkeypatch):
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    at = run_with(mh_sentence="the cat sat on the mat")
    assert_clean(at)
    assert not attention_views(at)
    tiles = figures(at)[0]
    assert [a["text"] for a in tiles["layout"]["annotations"]] == [f"<b>head {h}</b>" for h in range(1, 9)]


def test_invalid_h_after_changing_d_falls_back_to_a_divisor():
    at = run_with(mh_d=64, mh_h=64)
    at.select_slider(key="mh_d").set_value(24)
    at.run()
    assert_clean(at)
    H = at.selectbox(key="mh_h").value
    assert 24 % H == 0
    assert shapes_shown(at)[5] == str([1, H, 6, 24 // H])


@pytest.mark.parametrize("lang", list(LANGS))
def test_empty_sentence_says_so(lang):
    at = run_with(lang, mh_sentence="   ")
    assert_clean(at)
    assert [e.value for e in at.error] == [catalogue(lang)["multihead.errors.no_words"]]


def test_heads_csv_has_every_head_in_one_table():
    w = np.random.default_rng(0).dirichlet(np.ones(3), size=(2, 3))  # (H=2, L=3, L=3)
    rows = list(csv.reader(io.StringIO(heads_csv(w, ["a", "b,c", "<s>"]))))
    assert rows[0] == ["head", "", "a", "b,c", "<s>"] and len(rows) == 1 + 2 * 3
    assert [r[:2] for r in rows[1:]] == [["1", "a"], ["1", "b,c"], ["1", "<s>"], ["2", "a"], ["2", "b,c"], ["2", "<s>"]]
    assert np.allclose(np.array([[float(x) for x in r[2:]] for r in rows[1:]]).reshape(2, 3, 3), w)


def test_too_long_sentence():
    at = run_with("ko", mh_sentence=" ".join(f"단어{i}" for i in range(70)), mh_d=16, mh_h=2)
    assert_clean(at)
    assert at.warning and "64" in at.warning[0].value
    assert shapes_shown(at, "ko")[6] == str([1, 2, 64, 64])
    kind, maps = heads_view(at)
    assert (kind["heads"], kind["nq"], kind["nk"]) == (2, 64, 64)


# ---------------------------------------------------------------- one layer, end to end

LAYER_STEPS = ["input", "attention", "sum1", "norm1", "hidden", "ffn", "sum2", "output"]


@pytest.mark.parametrize("lang", list(LANGS))
def test_one_layer_end_to_end(lang, monkeypatch):
    """After the heads: the sentence's vectors through attention → add & norm → FFN → add & norm of the
    project's own EncoderLayer, with every shape and what each step changes."""
    from app.i18n import t
    from model.lessons.layer_walk import layer_walk
    monkeypatch.setattr("app.i18n.lang", lambda: lang)
    at = run_with(lang, mh_sentence="the cat sat on the mat")
    assert_clean(at)
    headers = [h.value for h in at.header]
    assert headers[-1] == t("multihead.layer.header")
    assert headers.index(t("multihead.layer.header")) > headers.index(t("multihead.maps.header"))
    steps = next(d for d in tables(at) if t("multihead.layer.col_change") in d.columns)
    assert list(steps[t("multihead.layer.col_stage")]) == [t(f"multihead.layer.stage.{s}") for s in LAYER_STEPS]
    assert list(steps[t("multihead.col_shape")]) == [str([1, 6, 64])] * 4 + [str([1, 6, 256])] + [str([1, 6, 64])] * 3
    walk = layer_walk("the cat sat on the mat".split(), 64, 8, seed=0)
    norms = [float(x) for x in steps[t("multihead.layer.col_norm")]]
    assert norms == pytest.approx([float(s.norms.mean()) for s in walk.steps], abs=6e-3)
    tokens = next(d for d in tables(at) if t("multihead.layer.col_token") in d.columns)
    assert list(tokens[t("multihead.layer.col_token")]) == "the cat sat on the mat".split()
    assert [float(x) for x in tokens[t("multihead.layer.col_relu")]] == pytest.approx(
        list(walk.relu_zero_share), abs=6e-4)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics[t("multihead.layer.d_ff")] == "256"
    assert float(metrics[t("multihead.layer.gap")]) <= 1e-6
    lengths = [f for f in figures(at) if title(f) == t("multihead.layer.chart_title")]
    assert len(lengths) == 1 and len(lengths[0]["data"]) == 5
    text = "\n".join(m.value for m in at.markdown)
    assert "d_ff = 256" in text and "√64 = 8.00" in text


def test_one_layer_follows_d_and_h():
    at = run_with(mh_sentence="a b c", mh_d=16, mh_h=4)
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["d_ff = 4 · D"] == "64"
    steps = tables(at)[2]
    assert list(steps["shape (this run)"])[4] == str([1, 3, 64])


# What one head versus H heads changes: softmax runs over the keys in both; the dot
# products run over D or d_h dimensions (one score matrix or H of them), and the scale is 1/√D or 1/√d_h.
COMPARE_SAYS = {
    "en": ["over the keys", "1/√D", "1/√d_h", "H separate score matrices"],
    "ko": ["키에 대해", "1/√D", "1/√d_h", "점수 행렬 H개"],
}
COMPARE_NEVER = {"en": "softmax over all D dimensions", "ko": "D차원 전체에 소프트맥스"}


@pytest.mark.parametrize("lang", list(LANGS))
def test_one_head_versus_many_names_the_real_difference(lang):
    at = run_with(lang, mh_sentence="the cat sat on the mat")
    assert_clean(at)
    shown = "\n".join(rendered_text(at))
    for phrase in COMPARE_SAYS[lang]:
        assert phrase in shown, phrase
    assert COMPARE_NEVER[lang] not in shown
