"""Shared work is done once for the whole server (issue 12, item 6): two learners typing the same sentence
into the inspector share one translation, one set of figures and one table of head statistics; what is
kept is bounded; the long-lived heap is frozen so Streamlit's collection after every run stays cheap."""
from __future__ import annotations

import gc

import pytest

import app.resources as res
from tests.apptest_read import figures
from tests.apptest_util import assert_clean, run_page

SENTENCE = "The teacher does not buy a red apple at the market today."  # no other test types this one


@pytest.fixture
def fresh_caches():
    res._translation.clear()
    res._shared_view.clear()
    yield
    res._translation.clear()
    res._shared_view.clear()


class Counter:
    """Wraps a function and counts its calls (restored by monkeypatch after the test)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *a, **k):
        self.calls += 1
        return self.fn(*a, **k)


def _type(lang: str):
    at = run_page("inspector.py", lang)
    at.text_area(key="insp_text").set_value(SENTENCE).run()
    assert_clean(at)
    return at


@pytest.mark.slow
def test_two_sessions_with_the_same_sentence_compute_once(fresh_caches, monkeypatch):
    import app.charts.heatmaps as heatmaps
    import model.decode as decode
    import model.metrics as metrics
    translate, grid, stats = Counter(decode.translate), Counter(heatmaps.head_grid), Counter(metrics.summarize_heads)
    monkeypatch.setattr(decode, "translate", translate)
    monkeypatch.setattr(heatmaps, "head_grid", grid)  # the page imports it on each run: the counter is used
    monkeypatch.setattr(metrics, "summarize_heads", stats)

    first = _type("en")
    after_first = (translate.calls, grid.calls, stats.calls)
    assert after_first[0] >= 1 and after_first[1] >= 1 and after_first[2] >= 1  # this sentence was computed
    second = _type("en")  # another browser session, same sentence
    assert (translate.calls, grid.calls, stats.calls) == after_first, "the second session recomputed"
    assert figures(first) == figures(second)  # and sees exactly the same figures

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

    from app.charts.style import toolbar_room
    fig = res.shared_figure("ready-test", (1,), lambda: go.Figure(layout={"title": {"text": "t"}, "height": 300}))
    height = fig.layout.height
    assert toolbar_room(fig) is fig and fig.layout.height == height  # drawing it again changes nothing
    assert res.shared_figure("ready-test", (1,), lambda: pytest.fail("built twice")) is fig


def test_loading_a_model_freezes_the_long_lived_heap():
    """After a model load the heap that lives as long as the server is in the permanent generation, so the
    full collection Streamlit runs after every script run does not walk it."""
    res._load.clear()
    res.load_model(res.SHIPPED["lm"])
    assert gc.get_freeze_count() > 50_000


def test_a_frozen_figure_draws_exactly_as_the_figure():
    """A shared figure is frozen (its to_dict made once): Streamlit gets the same dict, and so the same JSON,
    as from the plain figure, and every later draw gets that dict without copying it again."""
    import numpy as np
    import plotly.io as pio

    from app.charts.heatmaps import head_grid
    from app.charts.style import FrozenFigure, freeze_figure, toolbar_room
    w = np.random.default_rng(0).random((2, 3, 5, 4))
    plain = toolbar_room(head_grid(w, layer_title="Layer", head_title="Head"))
    frozen = freeze_figure(toolbar_room(head_grid(w, layer_title="Layer", head_title="Head")))
    assert isinstance(frozen, FrozenFigure) and type(plain) is not FrozenFigure
    assert pio.to_json(frozen.to_dict(), validate=False) == pio.to_json(plain.to_dict(), validate=False)
    assert frozen.to_dict() is frozen.to_dict()


def test_a_shared_table_holds_the_rows_values(fresh_caches):
    rows = [{"layer": 1, "head": 2, "entropy": 0.25, "name": "가"}, {"layer": 1, "head": 3, "entropy": 1.5, "name": "b"}]
    table = res.shared_table("t", ("k",), lambda: rows)
    assert table.to_pylist() == rows
    assert res.shared_table("t", ("k",), lambda: []) is table  # built once per key
    mixed = [{"a": 1}, {"a": "text"}]  # Arrow cannot type this column: the rows stay rows
    assert res.table_data(mixed) == mixed
