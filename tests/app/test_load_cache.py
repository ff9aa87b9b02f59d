"""Shared work is done once for the whole server: two learners typing the same sentence
into the inspector share one translation, one set of figures and one table of head statistics; what is
kept is bounded; the long-lived heap is frozen so Streamlit's collection after every run stays cheap."""
from __future__ import annotations

import functools
import gc
import json

import pytest

import app.resources as res
from tests.apptest_read import figures
from app.state import open_tab
from tests.apptest_util import assert_clean, run_page

SENTENCE = "The teacher does not buy a red apple at the market today."  # no other test types this one


@pytest.fixture
def fresh_caches():
    res._of_weights.clear()
    res._shared_view.clear()
    yield
    res._of_weights.clear()
    res._shared_view.clear()


class Counter:
    """Wraps a function and counts its calls (restored by monkeypatch after the test); it keeps the function's
    name, which the caches of app.resources key it by."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0
        functools.update_wrapper(self, fn)

    def __call__(self, *a, **k):
        self.calls += 1
        return self.fn(*a, **k)


def _type(lang: str):
    """A session types the sentence (the maps tab is open), then opens the statistics tab (drawn when opened).
    Returns the figures the maps tab showed."""
    at = run_page("inspector.py", lang)
    at.text_area(key="insp_text").set_value(SENTENCE).run()
    assert_clean(at)
    maps = figures(at)
    open_tab(at.session_state, "insp_tab", "stats")
    at.run()
    assert_clean(at)
    return maps


@pytest.mark.slow
@pytest.mark.parametrize("maps", ["browser", "server"])
def test_two_sessions_with_the_same_sentence_compute_once(fresh_caches, monkeypatch, maps):
    """The translation, the maps (the attention view's bytes, or the grid figure where the server draws it) and the
    statistics are computed once for every session that types the same sentence."""
    import app.charts.heatmaps as heatmaps
    import model.inference.decode as decode
    import model.inference.metrics as metrics
    import pages.views.inspector_view as inspector_view
    if maps == "server":
        monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")
    drawn = Counter(heatmaps.head_grid if maps == "server" else inspector_view.view_payload)
    translate, grid, stats = Counter(decode.translate), drawn, Counter(metrics.summarize_heads)
    monkeypatch.setattr(decode, "translate", translate)
    # the page imports these on each run (or calls them through their module): the counters are used
    monkeypatch.setattr(heatmaps if maps == "server" else inspector_view, drawn.__name__, drawn)
    monkeypatch.setattr(metrics, "summarize_heads", stats)

    first = _type("en")
    after_first = (translate.calls, grid.calls, stats.calls)
    assert after_first[0] >= 1 and after_first[1] >= 1 and after_first[2] >= 1  # this sentence was computed
    second = _type("en")  # another browser session, same sentence
    assert (translate.calls, grid.calls, stats.calls) == after_first, "the second session recomputed"
    assert first == second and (first or maps == "browser")  # and sees exactly the same figures

    _type("ko")  # the same sentence in Korean: new titles, so new figures, but the same translation
    assert translate.calls == after_first[0]
    assert grid.calls > after_first[1]


def test_shared_views_are_bounded(fresh_caches):
    built: list[int] = []

    def build(i):
        built.append(i)
        return {"figure": i}

    for i in range(res.VIEWS_KEPT + 1):  # one more than is kept: the least recently used goes
        assert res.shared_view("bound-test", (i,), lambda: build(i)) == {"figure": i}
    assert len(built) == res.VIEWS_KEPT + 1
    res.shared_view("bound-test", (res.VIEWS_KEPT,), lambda: build(-1))  # the newest is still there
    assert len(built) == res.VIEWS_KEPT + 1
    res.shared_view("bound-test", (0,), lambda: build(0))  # the oldest was dropped: built again
    assert built[-1] == 0 and len(built) == res.VIEWS_KEPT + 2


def test_a_shared_figure_is_ready_to_draw_before_it_is_shared(fresh_caches):
    """The toolbar room is added once, inside the cache: sessions drawing it never change the shared object."""
    import plotly.graph_objects as go

    from app.charts.style import MODEBAR_ROOM, ReadyFigure, ready_figure
    fig = res.shared_figure("ready-test", (1,), lambda: go.Figure(layout={"title": {"text": "t"}, "height": 300}))
    assert isinstance(fig, ReadyFigure) and fig.to_dict()["layout"]["height"] == 300 + MODEBAR_ROOM
    assert ready_figure(fig) is fig and fig.to_dict()["layout"]["height"] == 300 + MODEBAR_ROOM  # drawn again: same
    assert res.shared_figure("ready-test", (1,), lambda: pytest.fail("built twice")) is fig


def test_loading_a_model_freezes_the_long_lived_heap():
    """After a model load the heap that lives as long as the server is in the permanent generation, so the
    full collection Streamlit runs after every script run does not walk it."""
    res._load.clear()
    res.load_model(res.SHIPPED["lm"])
    assert gc.get_freeze_count() > 50_000


def _streamlit_spec(fig) -> str:
    """The JSON st.plotly_chart sends for `fig`, made the way Streamlit makes it."""
    import plotly.io as pio
    import plotly.tools
    return pio.to_json(plotly.tools.return_figure_from_figure_or_data(fig, validate_figure=True), validate=False)


def _all_kinds_of_figure():
    """One figure of each builder the pages use: heatmaps (numbers, text, NaN, ±inf), lines with None gaps,
    bars, a legend, shapes, annotations."""
    import numpy as np

    from app.charts import curves, heatmaps
    from app.charts.headview import head_view
    rng = np.random.default_rng(0)
    w = rng.random((2, 3, 5, 4))
    m = rng.normal(size=(4, 4))
    m[0, 1], m[2, 2], m[3, 0] = np.nan, np.inf, -np.inf
    return {
        "grid": heatmaps.head_grid(w, layer_title="Layer", head_title="Head"),
        "detail": heatmaps.attention_heatmap(w[0, 0], ["<s>", "a", "b", "c", "d"], ["x", "y", "z", "w"], title="t · 1"),
        "matrix": heatmaps.matrix_heatmap(m, title="scores", highlight=m > 0.5),
        "headview": head_view(w[1], ["<s>", "a", "b", "c", "d"], ["x", "y", "z", "w"], [0, 2]),
        "bars": curves.bar_chart(["가", "b", "<s>"], [0.5, 0.25, 0.125], horizontal=True, title="top"),
        "lines": curves.line_chart([1, 2, 3], {"a": [1.0, None, 3.0], "b": [3, 2, 1]}, title="lines", vline=2,
                                   vline_label="peak", log_x=True),
    }


def test_a_ready_figure_draws_exactly_as_the_figure():
    """A ready figure (its dict made once, as plain JSON values) makes Streamlit send the same JSON as the figure
    it was made from (the same values; keys may come in another order), once that figure has its toolbar room; every later draw gets that dict without copying."""
    import plotly.graph_objects as go

    from app.charts.margins import fit_layout
    from app.charts.style import ROOM_MARK, ready_figure, toolbar_room
    from tests.app.test_charts import _plain  # typed arrays read back, NaN and ±inf as the gaps they draw
    for (name, fig), plain in zip(_all_kinds_of_figure().items(), _all_kinds_of_figure().values()):
        ready = ready_figure(fig)
        plain = go.Figure(plain)  # plotly's own figure, with its checks, from the builder's figure dict
        # the same figure, built again, with its margins fitted to its labels, its legend put under its x axis
        # and its toolbar room added the way plotly adds them
        plain_dict = plain.to_dict()
        layout = plain.layout.to_plotly_json()
        fitted = fit_layout(plain_dict["data"], plain_dict["layout"])
        if "margin" in fitted:
            layout["margin"] = fitted["margin"]
            plain.update_layout(margin=fitted["margin"])
        if "legend" in fitted:
            plain.update_layout(legend=fitted["legend"])
        if toolbar_room(layout).get("meta") == ROOM_MARK:
            plain.update_layout(margin=layout["margin"], height=layout["height"], title=layout["title"], meta=ROOM_MARK)
        assert _plain(json.loads(_streamlit_spec(ready))) == _plain(json.loads(_streamlit_spec(plain))), name
        assert ready.to_dict() is ready.to_dict() and ready_figure(ready) is ready
    assert "meta" not in ready_figure(go.Figure()).to_dict()["layout"]  # no title: no room


def test_a_shared_table_holds_the_rows_values(fresh_caches):
    rows = [{"layer": 1, "head": 2, "entropy": 0.25, "name": "가"}, {"layer": 1, "head": 3, "entropy": 1.5, "name": "b"}]
    table = res.shared_table("t", ("k",), lambda: rows)
    assert table.to_pylist() == rows
    assert res.shared_table("t", ("k",), lambda: []) is table  # built once per key
    mixed = [{"a": 1}, {"a": "text"}]  # Arrow cannot type this column: the rows stay rows
    assert res.table_data(mixed) == mixed


def test_a_shared_figure_or_table_is_kept_per_language(fresh_caches, monkeypatch):
    """The language is part of every shared view's key by construction: a call site cannot forget it."""
    import plotly.graph_objects as go
    built = []

    def build():
        built.append(1)
        return go.Figure(layout={"title": {"text": "t"}})

    from app.i18n import LANGS
    figs = {}
    for language in LANGS:
        monkeypatch.setattr(res, "lang", lambda language=language: language)
        figs[language] = res.shared_figure("lang-test", (1,), build)
        assert res.shared_figure("lang-test", (1,), build) is figs[language]  # kept for this language
        res.shared_table("lang-rows", (1,), lambda: [{"a": 1}])
    assert len(built) == len(LANGS) and len({id(f) for f in figs.values()}) == len(LANGS)


def test_what_a_model_computes_is_kept_per_version_of_its_weights(tmp_path):
    """of_weights keys a result by the model folder and its weights stamp: newer weights (a training run saved
    them) compute again; the same weights and arguments do not."""
    import os
    import shutil
    folder = tmp_path / "lm"
    shutil.copytree(res.SHIPPED["lm"], folder)
    calls = []

    def count(loaded, x):
        calls.append(x)
        return (loaded.config.d_model, x)

    count.__qualname__ = "count"  # as if defined at the module's top: of_weights keys a function by its full name
    first = res.of_weights(count, folder, 1)
    assert res.of_weights(count, folder, 1) is first and calls == [1]
    res.of_weights(count, folder, 2)
    assert calls == [1, 2]
    stamp = res.weights_stamp(folder)
    weights = folder / "model.safetensors"
    os.utime(weights, (stamp + 10, stamp + 10))  # the weights were written again
    assert res.weights_stamp(folder) == stamp + 10
    assert res.of_weights(count, folder, 1) == first and calls == [1, 2, 1]
    assert res.weights_stamp(tmp_path / "nothing") == 0.0 and res.weights_stamp(None) == 0.0


def test_computed_results_are_cached_per_arguments_and_copied():
    from model.lessons.positions import encoding_table
    a = res.computed(encoding_table, 8, 16)
    b = res.computed(encoding_table, 8, 16)
    assert a is not b and (a == b).all()  # st.cache_data: each caller gets its own copy
    with pytest.raises(ValueError):
        res.computed(lambda: 1)  # a lambda has no name to key it by


def _read_count(folder: str) -> int:
    """A stand-in for a function that reads run files: how many files the folder holds."""
    from pathlib import Path
    return len(list(Path(folder).iterdir()))


def test_what_is_read_from_disk_is_at_most_fresh_s_old(tmp_path, monkeypatch):
    """from_disk reads once per period of fresh_s seconds for every session, then reads again."""
    now = [1000.0]
    monkeypatch.setattr(res.time, "time", lambda: now[0])
    (tmp_path / "a").write_text("a")
    assert res.from_disk(_read_count, str(tmp_path), fresh_s=3.0) == 1
    (tmp_path / "b").write_text("b")
    now[0] += 1.0
    assert res.from_disk(_read_count, str(tmp_path), fresh_s=3.0) == 1  # within the period: not read again
    now[0] += 3.0
    assert res.from_disk(_read_count, str(tmp_path), fresh_s=3.0) == 2
    with pytest.raises(ValueError):
        res.from_disk(lambda: 1, fresh_s=3.0)  # a lambda has no name to key it by


def test_a_shared_view_key_is_a_tuple_of_plain_values(fresh_caches):
    assert res.shared_view("key-test", (*res.weights_key(res.SHIPPED["lm"]), "text", (1, 2)), lambda: 1) == 1
    with pytest.raises(TypeError, match="'key-test'.*part 1 .* list"):
        res.shared_view("key-test", ("text", [1, 2]), lambda: 1)
    with pytest.raises(TypeError, match="'key-test'.*not list"):
        res.shared_view("key-test", ["text"], lambda: 1)
