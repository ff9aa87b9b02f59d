"""The app's chart element (app/fast/chart.py, app/static/atlas_chart.js): what it sends the browser, that a
chart keeps its identity from one run to the next (so the browser updates it in place), its files, and the switch
back to st.plotly_chart (ATLAS_CHARTS=streamlit), with which every page still draws every chart."""
from __future__ import annotations

import json
import re

import numpy as np

import plotly.graph_objects as go
import pytest
import streamlit

from app.fast import chart
from app.charts.style import ready_figure
from app.pages_list import PAGES
from tests.apptest_read import charts
from tests.apptest_util import assert_clean, run_page

CONFIG = {"displaylogo": False}


def _spec(fig) -> dict:
    return json.loads(chart.payload(ready_figure(fig), CONFIG, "could not draw"))


def test_payload_leaves_streamlits_template_to_the_browser():
    spec = _spec(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout={"title": {"text": "A"}, "height": 300}))
    assert spec["theme"] is True and "template" not in spec["figure"]["layout"]
    assert spec["height"] > 300  # the toolbar's strip above the title (app.charts.style.toolbar_room)
    assert spec["figure"]["data"][0]["type"] == "heatmap"
    assert spec["config"]["displaylogo"] is False and "lasso2d" in spec["config"]["modeBarButtonsToRemove"]
    assert spec["plotly"].startswith("plotly.min.js?v=") and spec["themeFile"].startswith(chart.THEME + "?v=")
    assert spec["failed"] == "could not draw"


def test_payload_keeps_a_figure_of_its_own_template():
    fig = go.Figure(go.Bar(y=[1, 2]), layout={"template": "plotly_dark"})
    spec = _spec(fig)
    assert spec["theme"] is False and spec["figure"]["layout"]["template"]["layout"]["paper_bgcolor"]
    assert spec["height"] == chart.DEFAULT_HEIGHT


def test_payload_version_follows_the_figure():
    a = _spec(go.Figure(go.Bar(y=[1, 2])))
    assert _spec(go.Figure(go.Bar(y=[1, 2])))["version"] == a["version"]
    assert _spec(go.Figure(go.Bar(y=[1, 3])))["version"] != a["version"]


def test_plotly_in_app_static_is_the_installed_packages():
    """app/static/plotly.min.js is Plotly's build as the installed plotly package ships it (the figures are written
    for it), served by Streamlit's static file serving; nothing copies it at run time. After a plotly upgrade:
    python -c "import plotly.offline as o; open('app/static/plotly.min.js', 'w').write(o.get_plotlyjs())"
    """
    import plotly.offline
    head = (chart.STATIC / chart.PLOTLY).read_text(encoding="utf-8")[:200]
    shipped = re.search(r"plotly\.js v(\S+)", head)
    assert shipped and shipped.group(1) == plotly.offline.get_plotlyjs_version(), head


def test_atlas_charts_streamlit_asks_for_streamlits_chart(monkeypatch):
    assert chart.uses_element()  # .streamlit/config.toml serves app/static
    monkeypatch.setenv(chart.SWITCH, "streamlit")
    assert not chart.uses_element()


def test_without_static_serving_charts_go_through_streamlits_chart(monkeypatch):
    monkeypatch.setattr(chart.st, "get_option", lambda name: False if name == "server.enableStaticServing" else None)
    assert not chart.uses_element()


def test_files_are_named_with_their_version():
    """The browser never runs an old copy it kept: each file's address changes with its content."""
    for name in (chart.MODULE, chart.THEME, chart.PLOTLY):
        assert re.fullmatch(re.escape(name) + r"\?v=[0-9a-f]{12}", chart.versioned(name))
    assert chart.url(chart.MODULE) in chart.stub_js()


def test_the_theme_was_read_from_this_streamlit():
    """app/static/plotly_theme.json is what tools/capture_plotly_theme.py read off the installed Streamlit's own
    chart element; after an upgrade, run it again (the browser test below checks the look itself)."""
    theme = json.loads((chart.STATIC / chart.THEME).read_text())
    assert theme["streamlit"] == streamlit.__version__
    for scheme in ("light", "dark"):
        text = json.dumps(theme[scheme])
        assert "#000001" not in text and "#000038" not in text  # no placeholder colour left
        assert theme[scheme]["layout"]["font"]["family"]


def test_charts_keep_their_identity_when_a_control_moves():
    """The browser updates a chart in place only if the chart's element id stays the same from one run to the
    next while its figure changes: a chart whose id followed its data would be drawn from scratch every time."""
    at = run_page("positional.py", "en")
    assert_clean(at)
    before = {c.id: c.figure for c in charts(at)}
    assert len(before) == len(charts(at)) >= 10  # every chart has an id of its own
    at.slider(key="pe_d").set_value(32).run()
    assert_clean(at)
    after = {c.id: c.figure for c in charts(at)}
    assert set(after) == set(before)
    changed = [k for k in after if after[k] != before[k]]
    assert changed  # the same elements, new figures
    assert {c.kind for c in charts(at)} == {"bidi_component"}  # all drawn by the app's chart element


def test_a_chart_needs_its_key():
    """A chart's identity is the key its caller gives (no key derived from where the code is): plot() without one
    is an error, not a chart that a rerun would draw from scratch."""
    with pytest.raises(TypeError):
        chart.plot(go.Figure(go.Bar(y=[1, 2])))  # noqa


@pytest.mark.slow
@pytest.mark.parametrize("page", [p.file for p in PAGES])
def test_every_page_draws_with_streamlits_chart_when_switched(page, monkeypatch):
    """ATLAS_CHARTS=streamlit: the page runs without an exception and draws every chart the chart element draws,
    the same figures, each with st.plotly_chart (so both paths of app.fast.plot work on every page). The inspector's
    maps drawn by the server in both runs (the attention view needs the element's static files, so it is off with
    st.plotly_chart)."""
    monkeypatch.setenv("ATLAS_ATTENTION_VIEW", "server")

    def drawn():
        at = run_page(page, "en")
        assert_clean(at)
        return charts(at)
    element = drawn()
    monkeypatch.setenv(chart.SWITCH, "streamlit")
    switched = drawn()
    assert {c.kind for c in element} <= {"bidi_component"} and {c.kind for c in switched} <= {"plotly_chart"}
    assert len(switched) == len(element) and len({c.id for c in switched}) == len(switched)
    assert [[tr.get("type") for tr in c.figure["data"]] for c in switched] == \
        [[tr.get("type") for tr in c.figure["data"]] for c in element]
    assert [c.figure["layout"].get("title") for c in switched] == [c.figure["layout"].get("title") for c in element]


def _follower(fig, clicks: bool = False) -> dict:
    """The payload of `fig` as a chart that follows a two-valued browser choice (its z the same in both)."""
    from app.fast.choice import Choice, follow
    ready = ready_figure(fig)
    z = np.asarray(fig["data"][0]["z"], dtype=float)
    moves = follow(Choice(1, (1, 2), "ch"), traces=[(0, "z", np.stack([z, z]))])
    return json.loads(chart.payload(ready, CONFIG, "failed", clicks=clicks, follow=moves.spec(), download="PNG"))


def _maps():
    from app.charts.heatmaps import attention_heatmap, matrix_heatmap, stage_figure
    from app.charts.style import lift_title
    w = np.full((3, 3), 1 / 3)
    return [matrix_heatmap(np.arange(6.0).reshape(2, 3) - 2, ["a", "b", "c"], ["x", "y"], zmid=0,
                           highlight=np.eye(2, 3) > 0),
            lift_title(attention_heatmap(w, ["a", "b", "c"], ["a", "b", "c"], title="w")),
            attention_heatmap(np.full((30, 30), 1 / 30), [str(i) for i in range(30)], [str(i) for i in range(30)]),
            stage_figure("scores", w - 0.2, ["a", "b", "c"], ["a", "b", "c"], title="s")]


def _numeric_maps():
    from app.charts.heatmaps import numeric_heatmap
    from app.charts.style import amend
    return [numeric_heatmap(np.zeros((4, 5)), vlines=[1.5], title="table"),
            numeric_heatmap(np.zeros((300, 2)), x=[10, 20], y=np.arange(300) * 0.5),  # int16 / float arrays
            amend(numeric_heatmap(np.zeros((4, 5)), vlines=[4.5], narrow=True, title="a title that wraps, and wraps"),
                  dict(xaxis=dict(range=[-0.5, 9.5])))]


def test_own_map_takes_the_apps_labelled_maps_and_nothing_it_cannot_draw():
    """app/static/atlas_map.js draws one heatmap on category axes with outlined cells, or on numeric axes (evenly
    spaced numbers, automatic ticks) with dashed vertical lines; a figure with anything else (annotations, another
    trace, uneven numbers, ticks of its own, shapes of another kind, a colour bar's title) stays with Plotly."""
    from app.charts.heatmaps import head_grid, head_tiles, numeric_heatmap
    from app.charts.style import amend
    for fig in [*_maps(), *_numeric_maps()]:
        assert chart.own_map(ready_figure(fig)), fig["layout"].get("title")
    w = np.full((2, 2, 3, 3), 1 / 3)
    others = [head_grid(w), head_tiles(w[0], list("abc"), list("abc")), go.Figure(go.Scatter(y=[1, 2])).to_plotly_json(),
              numeric_heatmap(np.zeros((4, 4)), x=[0, 1, 3, 4]), numeric_heatmap(np.zeros((4, 4)), x=[3, 2, 1, 0]),
              numeric_heatmap(np.zeros((4, 4)), colorbar_title="value"),
              amend(numeric_heatmap(np.zeros((4, 4))), dict(xaxis=dict(dtick=1))),
              amend(numeric_heatmap(np.zeros((4, 4))), dict(yaxis=dict(type="log"))),
              amend(numeric_heatmap(np.zeros((4, 4))), dict(shapes=[dict(type="rect", x0=0, x1=1, y0=0, y1=1)]))]
    two = ready_figure(_maps()[0])
    two = {"data": two["data"] * 2, "layout": two["layout"]}
    noted = ready_figure(_maps()[1])
    noted = {"data": noted["data"], "layout": {**noted["layout"], "annotations": [{"text": "x"}]}}
    titled = ready_figure(_maps()[1])
    titled = {"data": titled["data"], "layout": {**titled["layout"], "title": {"text": "placed by Plotly's rules"}}}
    some = ready_figure(_maps()[1])
    some = {"data": some["data"], "layout": {**some["layout"], "xaxis": {**some["layout"]["xaxis"], "tickvals": ["a"]}}}
    for fig in [*(ready_figure(f) for f in others), two, noted, titled, some]:
        assert not chart.own_map(fig)


def test_own_lines_take_the_apps_curves_and_nothing_they_cannot_draw():
    """app/static/atlas_map.js also draws app.charts.curves.line_chart's curves (markers, dashed lines, point labels,
    a legend under the plot, add_vline's lines) on linear axes and on log axes labelled by powers of ten or by
    ticks given with their text; Plotly's own log ticks, text on points, other shapes, bars and histograms stay
    with Plotly."""
    from app.charts.curves import anchor_figure, bar_chart, cost_figure, histogram_overlay, line_chart
    from app.charts.style import amend
    x = np.arange(1, 50)
    ours = [line_chart(x, {"a": x * 2.0, "b": x * 3.0}, markers={"peak": ([10], [20.0], ["10: 20"])}, title="t"),
            line_chart(x, {"a": x * 2.0}, mode="lines+markers", vline=25, vline_label="v"),
            amend(line_chart(range(8), {"a": np.cos(np.arange(8))}), dict(yaxis=dict(range=[-1.2, 1.2]))),
            anchor_figure(np.cos(x / 5.0), np.cos(x / 5.0), x, ("measured", "formula"), 12, title="p = 12", x_title="q",
                          y_title="dot"),  # the anchor's line
            line_chart(x, {"a": x * 2.0}, log_x=True), line_chart(x, {"a": x * 2.0}, log_y=True),  # powers of ten
            amend(line_chart(x, {"a": x * 2.0}, log_x=True, log_y=True, mode="lines+markers"),
                  dict(xaxis=dict(tickvals=[4, 16], ticktext=["4", "16"]), yaxis=dict(dtick="D2"))),  # named; 2 and 5
            cost_figure({"n": x}, {"a": x * 2.0}, 10, 20, ("cost", "t"))]  # lines at n and d, named at the edges
    for fig in ours:
        assert chart.own_lines(ready_figure(fig)), fig["layout"].get("title")
    shape = amend(line_chart(x, {"a": x * 2.0}), dict(shapes=[dict(type="line", x0=1, x1=1, y0=0, y1=1)]))  # y data
    slanted = amend(line_chart(x, {"a": x * 2.0}), dict(shapes=[dict(type="line", x0=1, x1=2, xref="x", y0=0, y1=1,
                                                                     yref="y domain")]))
    boxed = amend(line_chart(x, {"a": x * 2.0}), dict(shapes=[dict(type="rect", x0=1, x1=1, xref="x", y0=0, y1=1,
                                                                   yref="y domain")]))
    texts = line_chart(x, {"a": x * 2.0})
    texts = {"data": [{**texts["data"][0], "mode": "lines+text", "text": ["a"] * len(x)}], "layout": texts["layout"]}
    auto_log = amend(line_chart(x, {"a": x * 2.0}), dict(xaxis=dict(type="log", dtick=None, exponentformat=None)))
    unnamed = amend(line_chart(x, {"a": x * 2.0}), dict(xaxis=dict(tickvals=[4, 16])))  # Plotly's own number format
    linear_power = amend(line_chart(x, {"a": x * 2.0}), dict(yaxis=dict(exponentformat="power")))
    half_decades = amend(line_chart(x, {"a": x * 2.0}, log_x=True), dict(xaxis=dict(dtick=0.5)))
    cost = cost_figure({"n": x}, {"a": x * 2.0}, 10, 20, ("cost", "t"))
    note_auto = amend(cost, dict(annotations=[{**cost["layout"]["annotations"][0], "xanchor": "auto"}]))
    note_in_data = amend(cost, dict(annotations=[{**cost["layout"]["annotations"][0], "yref": "y"}]))
    legend_right = amend(cost, dict(legend=dict(x=1)))  # Plotly's row width is then the page's, not the plot's
    others = [auto_log, unnamed, linear_power, half_decades, note_auto, note_in_data, legend_right, shape, slanted, boxed, texts,
              bar_chart(["a", "b"], [1, 2]), histogram_overlay({"a": np.arange(10.0)}),
              {"data": [{"type": "scatter", "mode": "lines", "x": ["a", "b"], "y": [1, 2]}], "layout": {}}]  # words
    for fig in others:
        assert not chart.own_lines(ready_figure(fig))
        assert not chart.own_map(ready_figure(fig))


def test_a_labelled_map_is_sent_to_our_map(monkeypatch):
    monkeypatch.delenv(chart.MAP_SWITCH, raising=False)
    spec = _follower(_maps()[0])
    assert spec["map"].startswith(chart.MAP_MODULE + "?v=") and spec["download"] == "PNG"
    assert "map" in _spec(_maps()[0])  # a map the server redraws for a slider: the same
    assert "map" not in _spec(go.Figure(go.Scatter(y=[1, 2])))
    assert "map" not in _follower(_maps()[0], clicks=True)  # clicks are Plotly's
    monkeypatch.setenv(chart.MAP_SWITCH, "plotly")
    assert "map" not in _follower(_maps()[0])
