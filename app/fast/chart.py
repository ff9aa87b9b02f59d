"""The app's chart element: a Plotly figure drawn by Plotly in the page, updated in place and drawn when it comes
near the screen (app/static/atlas_chart.js holds the browser's half and says why).

Streamlit's st.plotly_chart keys each chart by its figure: every changed figure is a new element that Plotly
draws from scratch, and every chart of a page is drawn when the page opens, also those far below the screen.
This element is a custom component (st.components.v2, in the page, no iframe) whose key the caller gives and
keeps from one run to the next, so the browser keeps its plot and hands it each new figure.

Its files are served by Streamlit's static file serving (`server.enableStaticServing` in .streamlit/config.toml
serves the `static` folder beside app/main.py at app/static/): atlas_chart.js, plotly_theme.json and plotly.min.js,
Plotly's own build as the plotly package ships it, kept in the repository (tests/app/test_chart_element.py says
when it is older than the installed package's and how to refresh it).

ATLAS_CHARTS=streamlit in the server's environment, or static serving turned off, draws every chart with
st.plotly_chart instead: the same figures, drawn the slower way."""
from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import streamlit as st

STATIC = Path(__file__).resolve().parents[1] / "static"
MODULE = "atlas_chart.js"
THEME = "plotly_theme.json"
PLOTLY = "plotly.min.js"
COMPONENT = "atlas_chart"
SWITCH = "ATLAS_CHARTS"  # ATLAS_CHARTS=streamlit: every chart through st.plotly_chart
MAP_MODULE = "atlas_map.js"
MAP_SWITCH = "ATLAS_MAPS"  # ATLAS_MAPS=plotly: the labelled maps drawn by Plotly too (for an A/B)
DEFAULT_HEIGHT = 450  # Plotly's own default, as Streamlit's chart element uses
# Toolbar as Streamlit's chart element sets it (no box or lasso selection on these charts)
REMOVED_BUTTONS = ["lasso2d", "select2d", "sendChartToCloud"]
# Toolbar with the PNG download button always visible; numbers come as CSV beside the figure.
PLOT_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


@functools.lru_cache(maxsize=8)
def _version(name: str) -> str:
    return hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:12]


def versioned(name: str) -> str:
    """A file of app/static with a query string that changes with the file (a browser never runs an old copy it
    kept), relative to atlas_chart.js."""
    return f"{name}?v={_version(name)}"


def url(name: str) -> str:
    """versioned(name) relative to the page."""
    return f"app/static/{versioned(name)}"


# The promise of the module, shared by every chart of the tab and by the browser's warm-up (app.fast.browser_warm)
LOAD_JS = 'window.__atlasChartModule ||= import(new URL("%s", document.baseURI).href)'


def module_stub(name: str, global_name: str) -> str:
    """A component's inline script that imports app/static/`name` (once per tab, its promise kept on window under
    `global_name`) and hands it each call's data: the module's render(c, call) and unmount(parentElement, call).
    Streamlit calls it with each new data, on the same element, and calls the cleanup it returns when the element
    goes, or at once for a call that newer data overtook while the module was loading: each call's cleanup is its
    own (a token), so a late one leaves the newer call's drawing alone."""
    load = LOAD_JS.replace("__atlasChartModule", global_name) % url(name)
    return """export default function (c) {
  const load = (%s), call = {};
  load.then((m) => m.render(c, call));
  return () => { load.then((m) => m.unmount(c.parentElement, call)); };
}""" % load


def stub_js() -> str:
    """The chart element's inline script (module_stub of app/static/atlas_chart.js)."""
    return module_stub(MODULE, "__atlasChartModule")


@functools.lru_cache(maxsize=1)
def _component():
    """The registered component (its script: stub_js)."""
    return st.components.v2.component(COMPONENT, js=stub_js(), isolate_styles=False)


def uses_element() -> bool:
    """Whether charts are drawn by this element: yes unless ATLAS_CHARTS=streamlit or static serving is off
    (then the browser could not load the element's files)."""
    if os.environ.get(SWITCH) == "streamlit":
        return False
    try:
        return bool(st.get_option("server.enableStaticServing"))
    except Exception:  # noqa: BLE001
        return False


def warm_js(idle: str) -> str:
    """An expression (a promise of the trace types drawn) that loads the module, Plotly and the theme, then
    draws one small figure of each trace type off the screen, one per call of the JavaScript function named
    `idle`, or '' where charts are drawn by st.plotly_chart."""
    if not uses_element():
        return ""
    return "(%s).then((m) => m.warmUp(%s, %s, %s))" % (LOAD_JS % url(MODULE), json.dumps(versioned(PLOTLY)),
                                                         json.dumps(versioned(THEME)), idle)


@functools.lru_cache(maxsize=1)
def _streamlit_template() -> dict:
    """Streamlit's default Plotly template (its placeholder colours), to recognise figures that use it."""
    from app.charts.style import default_template
    return default_template("streamlit")


def _categories(values) -> bool:
    return isinstance(values, (list, tuple)) and all(isinstance(v, str) for v in values)


def _evenly_spaced(values, n: int) -> bool:
    """Numbers along a numeric map's axis: none (0, 1, 2 …), or n evenly spaced ones (positions, dimensions), as
    an array, a list or Plotly's typed array."""
    if values is None:
        return True
    if isinstance(values, dict):  # Plotly's typed array: {dtype, bdata}
        if set(values) - {"dtype", "bdata", "shape"} or not str(values.get("dtype", "")).startswith(("i", "u", "f")):
            return False
        values = np.frombuffer(base64.b64decode(values["bdata"]), dtype=np.dtype(values["dtype"]).newbyteorder("<"))
    try:
        v = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        return False
    if v.ndim != 1 or len(v) != n or not np.isfinite(v).all():
        return False
    return n < 2 or (np.ptp(np.diff(v)) <= 1e-9 * max(1.0, abs(v).max()) and v[1] > v[0])


def _numeric_axes(trace: dict, layout: dict) -> bool:
    """A map with numbers along both axes (app.charts.heatmaps.numeric_heatmap): evenly spaced, Plotly's automatic
    linear ticks, the rows running down where the y axis is reversed, an x range the figure may give, and vertical
    dashed lines (add_vline) as its only shapes."""
    z = trace.get("z")
    shape = ([int(n) for n in str(z.get("shape", "")).split(",") if n.strip()] if isinstance(z, dict)
             else list(np.shape(z)))
    if len(shape) != 2:
        return False
    rows, cols = shape
    if not rows or not cols or not _evenly_spaced(trace.get("x"), cols) or not _evenly_spaced(trace.get("y"), rows):
        return False
    for axis in ("xaxis", "yaxis"):
        settings = layout.get(axis) or {}
        if settings.get("type") not in (None, "linear") or settings.get("showticklabels") is False:
            return False
        if any(settings.get(k) is not None for k in ("tickvals", "ticktext", "dtick", "tickformat", "nticks", "side")):
            return False
        if axis == "yaxis" and (settings.get("range") is not None or settings.get("autorange") not in (None, True, "reversed")):
            return False
    x_range = (layout.get("xaxis") or {}).get("range")
    if x_range is not None and (len(x_range) != 2 or not x_range[0] < x_range[1]):
        return False
    if ((trace.get("colorbar") or {}).get("title") or {}).get("text"):
        return False
    return _vertical_lines(layout)


def _vertical_lines(layout: dict) -> bool:
    """Whether the figure's shapes (none, or some) are all what add_vline draws: a line at one x over the y axis'
    whole height, coloured, wide and dashed as atlas_map.js's vline draws it."""
    return all(s.get("type") == "line" and s.get("xref") == "x" and s.get("yref") == "y domain" and s.get("x0") == s.get("x1")
               and s.get("y0", 0) == 0 and s.get("y1", 1) == 1 and not set(s.get("line") or {}) - {"color", "width", "dash"}
               and (s.get("line") or {}).get("dash") in (None, "solid", "dash", "dot", "longdash")
               and not set(s) - {"type", "xref", "yref", "x0", "x1", "y0", "y1", "line"}
               for s in layout.get("shapes") or [])


def own_map(figure: dict) -> bool:
    """Whether app/static/atlas_map.js draws this figure as Plotly would: one heatmap, on category axes (labelled
    rows and columns, as app.charts.heatmaps' matrix and attention maps are) or on numeric ones (positions and
    dimensions, as its numeric maps are), a colour scale as a list of stops, and nothing else in the layout that
    the module does not draw (annotations, images, shapes other than the marked cells' outline paths or a numeric
    map's vertical lines, subplots, a colour axis, a title not anchored to the figure's top)."""
    data, layout = figure.get("data") or [], figure.get("layout") or {}
    if len(data) != 1:
        return False
    trace = data[0]
    if trace.get("type") != "heatmap":
        return False
    if not isinstance(trace.get("colorscale"), (list, tuple)) or trace.get("coloraxis") or trace.get("zsmooth"):
        return False
    if any(layout.get(k) for k in ("annotations", "images", "xaxis2", "yaxis2", "coloraxis", "updatemenus", "sliders")):
        return False
    title = layout.get("title") or {}
    if isinstance(title, str) or (title.get("text") and (title.get("yref", "container") != "container" or title.get("yanchor") != "top")):
        return False  # a title placed by Plotly's own rules in the top margin (app.charts.style.lift_title anchors it)
    if not _categories(trace.get("x")) and not _categories(trace.get("y")):
        return not trace.get("text") and _numeric_axes(trace, layout)
    if not _categories(trace.get("x")) or not _categories(trace.get("y")):
        return False
    if any(s.get("type") != "path" or s.get("xref") != "x" or s.get("yref") != "y" for s in layout.get("shapes") or []):
        return False
    for axis, names in (("xaxis", trace["x"]), ("yaxis", trace["y"])):
        settings = layout.get(axis) or {}
        if settings.get("type") != "category" or settings.get("showticklabels") is False:
            return False
        if settings.get("tickvals") is not None and list(settings["tickvals"]) != list(names):
            return False  # a label for every category, in order (app.charts.heatmaps.category_ticks)
        if settings.get("ticktext") is not None and len(settings["ticktext"]) != len(names):
            return False
    return True


_NOTE_KEYS = {"x", "y", "text", "showarrow", "arrowhead", "arrowwidth", "arrowcolor", "standoff", "ax", "ay"}
_PLOT_NOTE_KEYS = {"x", "y", "text", "showarrow", "xref", "yref", "xanchor", "yanchor"}
_SCATTER_KEYS = {"type", "x", "y", "mode", "name", "line", "marker", "showlegend", "hovertemplate", "hoverinfo"}


def _numbers(values) -> bool:
    """Numbers along a curve: a list of numbers (None for a gap) or Plotly's typed array."""
    if isinstance(values, dict):
        return set(values) <= {"dtype", "bdata", "shape"} and str(values.get("dtype", "")).startswith(("i", "u", "f"))
    return isinstance(values, (list, tuple)) and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
                                                     for v in values)


def _point_label(a: dict) -> bool:
    """A marked point's label: text straight above its point, with a line down to it."""
    return not set(a) - _NOTE_KEYS and a.get("ax", 0) == 0 and a.get("showarrow") is not False


def _plot_note(a: dict) -> bool:
    """A text with no line, at an x on the axis and a height given as a share of the plot's (yref "paper"),
    anchored by a named side (the why page's "n = d")."""
    return not set(a) - _PLOT_NOTE_KEYS and a.get("showarrow") is False and a.get("xref", "x") == "x" \
        and a.get("yref") == "paper" and a.get("xanchor") in ("left", "center", "right") \
        and a.get("yanchor") in ("top", "middle", "bottom")


def own_lines(figure: dict) -> bool:
    """Whether app/static/atlas_map.js draws this figure of curves as Plotly would: app.charts.curves.line_chart's
    scatter traces (lines, markers as circles or stars, dashed lines), numbers on linear or log axes (_own_axis), the
    labels of marked points with their lines, add_vline's lines, a legend under the plot, a title anchored to the
    top; nothing else (text on the points, fills, other shapes, other axes)."""
    data, layout = figure.get("data") or [], figure.get("layout") or {}
    if not data or any(set(tr) - _SCATTER_KEYS or tr.get("type") != "scatter" for tr in data):
        return False
    for tr in data:
        if tr.get("mode") not in ("lines", "markers", "lines+markers") or not _numbers(tr.get("x")) or not _numbers(tr.get("y")):
            return False
        if set(tr.get("line") or {}) - {"color", "width", "dash"} or (tr.get("line") or {}).get("dash") not in (None, "solid", "dash", "dot", "longdash"):
            return False
        marker = tr.get("marker") or {}
        if set(marker) - {"size", "symbol", "color"} or marker.get("symbol") not in (None, "circle", "star") \
                or not isinstance(marker.get("color", ""), str):
            return False
    if any(layout.get(k) for k in ("images", "xaxis2", "yaxis2", "updatemenus", "sliders", "hovermode", "barmode")):
        return False
    if not _vertical_lines(layout):
        return False
    if not all(_point_label(a) or _plot_note(a) for a in layout.get("annotations") or []):
        return False
    title = layout.get("title") or {}
    if isinstance(title, str) or (title.get("text") and (title.get("yref", "container") != "container" or title.get("yanchor") != "top")):
        return False
    legend = layout.get("legend") or {}
    if legend and (legend.get("orientation") != "h" or float(legend.get("y", 1)) >= 0 or legend.get("xanchor", "left") != "left"
                   or not 0 <= float(legend.get("x", 0)) < 1):
        return False
    return all(_own_axis(layout.get(axis) or {}) for axis in ("xaxis", "yaxis"))


def _own_axis(a: dict) -> bool:
    """An axis of curves that atlas_map.js places and labels as Plotly does: linear (automatic ticks, or every
    dtick), or log with every dtick-th power of ten written as a power (or "D1" / "D2": the digits between too);
    either with its ticks given instead (tickvals, each named by ticktext)."""
    if set(a) - {"title", "type", "dtick", "range", "exponentformat", "tickvals", "ticktext", "tickmode"}:
        return False
    if a.get("type") not in (None, "linear", "log") or a.get("tickmode") not in (None, "array"):
        return False
    if a.get("tickvals") is not None or a.get("ticktext") is not None:
        return _numbers(a.get("tickvals")) and isinstance(a.get("ticktext"), (list, tuple)) \
            and len(a["ticktext"]) == len(a["tickvals"]) and all(isinstance(t, str) for t in a["ticktext"])
    if a.get("type") != "log":
        return a.get("exponentformat") is None
    dtick = a.get("dtick")
    whole = isinstance(dtick, (int, float)) and not isinstance(dtick, bool) and dtick >= 1 and float(dtick).is_integer()
    return a.get("exponentformat") == "power" and (whole or dtick in ("D1", "D2"))


def payload(fig_dict: dict, config: dict, failed: str, fullscreen: tuple[str, str] = ("Fullscreen", "Close fullscreen"),
            clicks: bool = False, follow: dict | None = None, download: str = "Download as PNG") -> bytes:
    """What the browser gets for one chart: the figure (without Streamlit's template, which the browser
    replaces with the theme's), its height, the toolbar and its fullscreen button's two titles, the files to
    load, a message for a chart that cannot be drawn, whether a click on it is sent back (`clicks`), and a
    version that changes with all of these (an unchanged chart is not drawn again). follow: the variants of a chart
    that follows browser choices (app.fast.choice.Follow.spec()). A figure that own_map or own_lines accepts and
    that answers no clicks is drawn by app/static/atlas_map.js (`map`, with the title of its PNG button, `download`)
    unless ATLAS_MAPS=plotly."""
    layout = dict(fig_dict.get("layout") or {})
    template = layout.get("template")
    theme = template is None or template == _streamlit_template()
    if theme:
        layout.pop("template", None)
    figure = {"data": fig_dict.get("data") or [], "layout": layout}
    config = {**config, "modeBarButtonsToRemove": REMOVED_BUTTONS}  # width: the element follows its box
    spec = {"figure": figure, "theme": theme, "config": config, "height": int(layout.get("height") or DEFAULT_HEIGHT),
            "plotly": versioned(PLOTLY), "themeFile": versioned(THEME), "failed": failed,
            "fullscreen": fullscreen[0], "closeFullscreen": fullscreen[1], "clicks": clicks}
    if follow is not None:
        spec["follow"] = follow
    if not clicks and os.environ.get(MAP_SWITCH) != "plotly" and (own_map(figure) or own_lines(figure)):
        spec["map"] = versioned(MAP_MODULE)
        spec["download"] = download
    body = json.dumps(spec, separators=(",", ":"), ensure_ascii=False).encode()
    version = hashlib.sha1(body).hexdigest()[:16]
    return body[:-1] + b',"version":"' + version.encode() + b'"}'


def chart_key(key: str) -> str:
    """The element's key: the caller's, the same from one run to the next, so the browser keeps the chart."""
    return f"atlas-chart-{key}"


def mount_hidden(key: str) -> None:
    """The element with an empty figure, for the browser's warm-up (app.fast.browser_warm), which draws it in a
    hidden box: Streamlit's front end then loads the code of custom components, which the first chart page
    would otherwise wait for. Nothing is drawn (a chart is drawn when it comes near the screen) and no plotly
    is imported (the figure is written here, in plotly's own form)."""
    if uses_element():
        _component()(key=chart_key(key), data=payload({"data": [], "layout": {"height": 10}}, PLOT_CONFIG, ""),
                     height="content")


def _clicked() -> None:
    """The click's callback: nothing to do here, the value comes back as plot()'s return value."""


def plot(fig, *, key: str, clickable: bool = False, follow=None) -> dict | None:
    """Draw a plotly figure (or an app.charts.style.ReadyFigure) with the app's toolbar (PNG download), its
    margins fitted to its labels and its title clear of the toolbar (ready_figure; `fig` itself is not
    changed): with the chart element, or with st.plotly_chart (uses_element). `key` names the chart: the same
    key from one run to the next is the same chart, updated in place in the browser.

    clickable: a click on one of the figure's points reruns the script, and in that run plot() returns the
    point, {"x": ..., "y": ...} as the browser sent it (check it before use); otherwise None. Only the chart
    element sends clicks (st.plotly_chart's selections do not cover heatmaps).

    follow: an app.fast.choice.Follow (or None): the figure's variants for browser choices, the one for their
    values now drawn in the browser; `fig` is the variant for the server's values."""
    from app.charts.style import ready_figure
    from app.i18n import t
    ready = ready_figure(fig)
    if not uses_element():
        st.plotly_chart(ready, config=PLOT_CONFIG, key=key)
        return None
    words = (t("common.chart_failed"), t("common.fullscreen"), t("common.close_fullscreen"), t("common.download_png"))
    sent_key = (words, clickable, id(follow))
    data = ready.sent.get(sent_key) if follow is None else None  # made once per figure and language (ready figures
    if data is None:                                               # are shared between reruns)
        data = payload(ready, PLOT_CONFIG, words[0], words[1:3], clicks=clickable,
                       follow=follow.spec() if follow is not None else None, download=words[3])
        if follow is None:
            ready.sent[sent_key] = data
    callbacks = {"on_click_change": _clicked} if clickable else {}  # a click comes back as the run's result
    result = _component()(key=chart_key(key), data=data, height="content", **callbacks)
    click = getattr(result, "click", None) if clickable else None
    return click if isinstance(click, dict) else None
