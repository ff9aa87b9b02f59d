"""The app's chart element (app/chart_element.py, app/static/atlas_chart.js): what it sends the browser, that a
chart keeps its identity from one run to the next (so the browser updates it in place), and its files."""
from __future__ import annotations

import json
import os
import stat

import plotly.graph_objects as go
import pytest
import streamlit

from app import chart_element
from app.charts.style import ready_figure
from tests.apptest_read import charts
from tests.apptest_util import assert_clean, run_page

CONFIG = {"displaylogo": False}


def _spec(fig) -> dict:
    return json.loads(chart_element.payload(ready_figure(fig).to_dict(), CONFIG, "could not draw"))


def test_payload_leaves_streamlits_template_to_the_browser():
    spec = _spec(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]), layout={"title": {"text": "A"}, "height": 300}))
    assert spec["theme"] is True and "template" not in spec["figure"]["layout"]
    assert spec["height"] > 300  # the toolbar's strip above the title (app.charts.style.toolbar_room)
    assert spec["figure"]["data"][0]["type"] == "heatmap"
    assert spec["config"]["displaylogo"] is False and "lasso2d" in spec["config"]["modeBarButtonsToRemove"]
    assert spec["plotly"].startswith("plotly-") and spec["themeFile"] == chart_element.THEME
    assert spec["failed"] == "could not draw"


def test_payload_keeps_a_figure_of_its_own_template():
    fig = go.Figure(go.Bar(y=[1, 2]), layout={"template": "plotly_dark"})
    spec = _spec(fig)
    assert spec["theme"] is False and spec["figure"]["layout"]["template"]["layout"]["paper_bgcolor"]
    assert spec["height"] == chart_element.DEFAULT_HEIGHT


def test_payload_version_follows_the_figure():
    a = _spec(go.Figure(go.Bar(y=[1, 2])))
    assert _spec(go.Figure(go.Bar(y=[1, 2])))["version"] == a["version"]
    assert _spec(go.Figure(go.Bar(y=[1, 3])))["version"] != a["version"]


def test_plotly_is_copied_once_and_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(chart_element, "STATIC", tmp_path)
    chart_element.plotly_file.cache_clear()
    try:
        name = chart_element.plotly_file()
        import plotly
        source = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
        assert name == f"plotly-{plotly.__version__}.min.js"
        assert (tmp_path / name).read_bytes() == open(source, "rb").read()
        assert not list(tmp_path.glob("*.tmp"))
    finally:
        chart_element.plotly_file.cache_clear()


def test_a_static_folder_it_cannot_write_falls_back_to_streamlits_chart(tmp_path, monkeypatch):
    if os.geteuid() == 0:
        pytest.skip("root writes to a read-only folder")
    tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setattr(chart_element, "STATIC", tmp_path)
    chart_element.plotly_file.cache_clear()
    try:
        assert chart_element.plotly_file() is None and not chart_element.available()
    finally:
        tmp_path.chmod(stat.S_IRWXU)
        chart_element.plotly_file.cache_clear()


def test_atlas_charts_streamlit_asks_for_streamlits_chart(monkeypatch):
    monkeypatch.setenv("ATLAS_CHARTS", "streamlit")
    assert not chart_element.available()


def test_the_theme_was_read_from_this_streamlit():
    """app/static/plotly_theme.json is what tools/capture_plotly_theme.py read off the installed Streamlit's own
    chart element; after an upgrade, run it again (the browser test below checks the look itself)."""
    theme = json.loads((chart_element.STATIC / chart_element.THEME).read_text())
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


def test_a_script_started_elsewhere_draws_with_streamlits_chart(tmp_path):
    """Streamlit serves the static folder beside the script it was started with: started from a script outside
    app/ (whose `static` is not app/static) the chart element's files would not be found, so charts must go
    through st.plotly_chart there (tests/pages/test_section_reruns_attention_masks.py's wrapper in a browser, too)."""
    from streamlit.testing.v1 import AppTest
    script = tmp_path / "elsewhere.py"
    script.write_text(f"""import sys
sys.path.insert(0, {str(chart_element.STATIC.parent.parent)!r})
import plotly.graph_objects as go
from app.ui import plot
plot(go.Figure(go.Bar(y=[1, 2])))
""")
    at = AppTest.from_file(str(script), default_timeout=60).run()
    assert not at.exception
    assert [c.kind for c in charts(at)] == ["plotly_chart"]
