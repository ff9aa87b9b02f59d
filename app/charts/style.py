"""One palette, one attention colour scale, one escaping of labels, shared layout helpers."""
from __future__ import annotations

import base64
import functools
import html
import json
import typing

import numpy as np
import plotly.graph_objects as go

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
ATTN_SCALE = "Blues"      # attention weights, always on 0…1
DIVERGING = "RdBu"        # signed values (scores), reversed so that positive is red, centred on 0
SEQUENTIAL = "Viridis"    # values of one sign (e.g. an output that is all positive)
OUTLINE = "#d62728"       # cells marked on a heatmap
FONT_FAMILY = "sans-serif"


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def to_np(x) -> np.ndarray:
    """A float numpy array from a tensor, list or array."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def esc(label) -> str:
    """Plotly reads labels as a subset of HTML: `<s>` would vanish and strike the rest through.
    Every token label that reaches a figure goes through here."""
    return html.escape(str(label), quote=False)


def labels(items) -> list[str]:
    """Escaped labels, made distinct: plotly merges equal category labels into one row or bar,
    so a repeated token gets a zero-width space and its occurrence number."""
    seen: dict[str, int] = {}
    out = []
    for item in items:
        text = esc(item)
        n = seen.get(text, 0)
        seen[text] = n + 1
        out.append(text if n == 0 else f"{text}\u200b ({n + 1})")
    return out


def margins(title: str = "", top: int | None = None) -> dict:
    return dict(l=10, r=10, t=top if top is not None else (60 if title else 30), b=10)


Figure = typing.NewType("Figure", dict)
"""A figure as plotly's figure dict, {"data": [traces], "layout": {...}}: the form plotly documents beside
go.Figure, which plotly.io, st.plotly_chart and plotly.js all read. `go.Figure(fig)` makes the object form
(tests do, to read a figure's parts with plotly's checks on)."""


def figure(data: list[dict], layout: dict) -> Figure:
    """The app's one way to build a figure: traces (dicts with their "type") and a layout written in plotly's
    own form (a title as dict(text=…)), kept as plotly's figure dict. Plotly's property checks, which made each
    build several times slower (a new figure per slider value), run in the tests instead: tests/app/test_charts.py
    builds every builder's figure as a go.Figure with the checks on. What the checks would change is done here:
    unset (None) properties are dropped and a named colour scale becomes plotly's list of colours (plotly.js
    knows other scales under some of the same names)."""
    traces = []
    for trace in data:
        trace = _set_only(trace)
        if isinstance(trace.get("colorscale"), str):
            trace["colorscale"] = named_scale(trace["colorscale"])
        traces.append(trace)
    return Figure({"data": traces, "layout": _set_only(layout)})


def _set_only(props):
    """Properties without the unset (None) ones, in nested settings and lists of them (shapes, annotations);
    None inside data arrays stays (a gap in a line)."""
    if isinstance(props, dict):
        return {k: _set_only(v) for k, v in props.items() if v is not None}
    if isinstance(props, list) and props and isinstance(props[0], dict):
        return [_set_only(v) for v in props]
    return props


@functools.lru_cache(maxsize=32)
def named_scale(name: str) -> tuple:
    """A colour scale's name as plotly writes it (its colours, not the name: plotly.js knows other scales under
    some of the same names)."""
    return tuple(tuple(stop) for stop in go.Heatmap(colorscale=name).to_plotly_json()["colorscale"])


def legend_below() -> dict:
    """Legends go under the plot: above it they collide with the title and the toolbar."""
    return dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left")


TITLE_PX = 220  # a title's line in the narrowest column a figure is drawn in (one of two on a 1000 px window, bold)
TITLE_LINE_PX = 18


def wrapped(text: str, size: float = 14, room: float = TITLE_PX) -> str:
    """A title broken into lines (<br>) at spaces so that each fits `room` px: Plotly never wraps a title, and a
    long one was cut at the figure's edge in a narrow column."""
    from app.charts.text_width import text_px
    lines: list[str] = []
    for word in str(text).split(" "):
        if lines and text_px(f"{lines[-1]} {word}", size) <= room:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "<br>".join(lines)


def lift_title(fig: Figure | go.Figure, extra: int = 36, room: float = TITLE_PX) -> Figure | go.Figure:
    """Heatmaps with the key axis on top: move the figure title above the axis title (wrapped to lines of `room`
    px, one of two columns by default, each further line given its room)."""
    layout = fig["layout"] if isinstance(fig, dict) else fig.layout.to_plotly_json()
    top = (layout.get("margin") or {}).get("t")
    text = ((layout.get("title") or {}).get("text") or "")
    text = wrapped(text, room=room) if "<br>" not in text else text
    extra += TITLE_LINE_PX * text.count("<br>")
    return amend(fig, dict(margin=dict(t=(top if top is not None else 30) + extra),
                           height=(layout.get("height") or 400) + extra,
                           title=dict(text=text, y=1.0, yref="container", yanchor="top", pad=dict(t=10),
                                      font=dict(size=14))))


def amend(fig: Figure | go.Figure, layout: dict | None = None, traces: dict[int, dict] | None = None,
          every_trace: dict | None = None) -> Figure | go.Figure:
    """A page's change to a builder's figure in one call, as fig.update_layout(**layout), fig.update_traces(change,
    selector=i) for each i: change in `traces`, and fig.update_traces(every_trace) make it, written in plotly's
    own form (xaxis=dict(range=…), not xaxis_range=…). A figure dict gets new dicts with the change merged in
    (a dict a builder shares, a cached margin, is never changed); a go.Figure is updated through its own API."""
    if not isinstance(fig, dict):
        if layout:
            fig.update_layout(**layout)
        for i, change in (traces or {}).items():
            fig.update_traces(change, selector=i)
        if every_trace:
            fig.update_traces(every_trace)
        return fig
    data = [_merged(_merged(tr, (traces or {}).get(i, {})), every_trace or {}) for i, tr in enumerate(fig["data"])]
    return {**fig, "data": data, "layout": _merged(fig["layout"], layout or {})}


def _merged(into: dict, change: dict) -> dict:
    """`into` with `change` merged in, nested settings key by key (as plotly's update_layout does)."""
    out = dict(into)
    for k, v in change.items():
        out[k] = _merged(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def value_scale(z: np.ndarray) -> dict:
    """Heatmap colour settings for arbitrary values: diverging around 0 when both signs occur,
    sequential when all values have one sign."""
    finite = z[np.isfinite(z)]
    if finite.size and (finite.min() >= 0 or finite.max() <= 0):
        return dict(colorscale=SEQUENTIAL, reversescale=False, zmin=None, zmax=None, zmid=None)
    zmax = float(np.abs(finite).max()) if finite.size else 1.0
    return dict(colorscale=DIVERGING, reversescale=True, zmin=-zmax, zmax=zmax, zmid=0)


MODEBAR_ROOM = 30  # px: the toolbar plotly shows on hover sits at the figure's top right
ROOM_MARK = "toolbar-room"  # layout.meta of a figure that already has the room


def toolbar_room(layout: dict) -> dict:
    """Keep a titled figure's title clear of the plotly toolbar, on the figure's layout as a dict (what
    `fig.to_dict()["layout"]` holds): a strip at the top for the toolbar, the title just below it (the plot
    area moves down by the same amount). Changes `layout` in place and returns it; a second call does nothing."""
    title = layout.get("title")
    if not (isinstance(title, dict) and title.get("text")) or layout.get("meta") == ROOM_MARK:
        return layout
    margin = layout.setdefault("margin", {})
    margin["t"] = (margin["t"] if margin.get("t") is not None else 80) + MODEBAR_ROOM
    layout["height"] = (layout.get("height") or 450) + MODEBAR_ROOM
    pad = title.setdefault("pad", {})
    pad["t"] = (pad["t"] if pad.get("t") is not None else 0) + MODEBAR_ROOM - 6
    title.update(yref="container", y=1.0, yanchor="top")
    layout["meta"] = ROOM_MARK
    return layout


class ReadyFigure(dict):
    """A finished figure as the plain figure dict plotly and Streamlit read ({"data": [...], "layout": {...}},
    JSON values only: arrays as plotly's base64 records), made once by `ready_figure`, with the margins its
    labels need and the toolbar room. It is only drawn, and may be shared by every session
    (app.resources.shared_figure): nothing changes it. st.plotly_chart takes it as it takes any figure dict;
    app.fast keeps what it sent the browser for it (`sent`), so an unchanged chart costs a rerun nothing."""

    def __init__(self, fig_dict: dict):
        super().__init__(fig_dict)
        self.sent: dict = {}

    def to_dict(self) -> dict:
        return self


def ready_figure(fig) -> ReadyFigure:
    """A plotly figure (or figure dict) as a ReadyFigure (one already is, and comes back as it is): its JSON
    through plotly's writer once, read back as plain values, with margins fitted to its labels
    (app.charts.margins) and the toolbar room (toolbar_room)."""
    if isinstance(fig, ReadyFigure):
        return fig
    import plotly.io as pio
    d = json.loads(pio.to_json(typed_arrays(fig) if isinstance(fig, dict) else fig, validate=False))
    if isinstance(fig, dict):  # a figure dict gets the template plotly gives a go.Figure
        d.setdefault("layout", {}).setdefault("template", default_template(pio.templates.default))
    layout = d.setdefault("layout", {})
    fitted = _fitted_layout(d.get("data") or [], layout)
    if "margin" in fitted:  # room for the labels before Plotly measures them: the figure is laid out once
        layout["margin"] = fitted["margin"]
    if "legend" in fitted:
        layout["legend"] = {**(layout.get("legend") or {}), **fitted["legend"]}
    toolbar_room(layout)
    return ReadyFigure(d)


# numpy dtypes that Plotly.js reads from a typed-array spec, by the short names it uses
_SHORT_TYPES = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4", "uint32": "u4",
                "float32": "f4", "float64": "f8"}


def _typed_array(a: np.ndarray):
    """A numeric array as Plotly.js's typed-array spec (dtype, base64 bytes, shape), as a go.Figure sends it:
    a 64-bit integer array narrowed to the smallest type that holds it; any other array (text, booleans, empty)
    stays as it is."""
    if a.size and a.dtype.kind in "iu" and a.dtype.itemsize == 8:
        for small in ((np.int8, np.int16, np.int32) if a.dtype.kind == "i" else (np.uint8, np.uint16, np.uint32)):
            info = np.iinfo(small)
            if info.min <= a.min() and a.max() <= info.max:
                a = a.astype(small)
                break
    short = _SHORT_TYPES.get(str(a.dtype))
    if short is None or not a.size:
        return a
    spec = {"dtype": short, "bdata": base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")}
    if a.ndim > 1:
        spec["shape"] = ", ".join(str(n) for n in a.shape)
    return spec


def typed_arrays(value: typing.Any) -> typing.Any:
    """A figure dict with every numeric numpy array in it as a typed-array spec: base64 is about half the bytes of
    the numbers written as text, and the server writes it in a fraction of the time (a 6 x 8 head grid: 0.7 MB of
    text against 0.4 MB)."""
    if isinstance(value, np.ndarray):
        return _typed_array(value)
    if isinstance(value, dict):
        return {k: typed_arrays(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [typed_arrays(v) for v in value]
    return value


def _fitted_layout(data, layout) -> dict:
    """app.charts.margins.fit_layout, which only saves the browser a second layout pass and puts a legend under
    the x axis: a figure it cannot read keeps its own margins and legend (and Plotly's automatic margins) rather
    than failing the page. tests/app/test_margins.py calls it unguarded on every builder's figure."""
    from app.charts.margins import fit_layout
    try:
        return fit_layout(data, layout)
    except Exception:  # noqa: BLE001
        return {}


@functools.lru_cache(maxsize=4)
def default_template(name) -> dict:
    """The layout template plotly gives a figure without one, by the default template's `name` (shared, read
    only)."""
    import plotly.io as pio
    return json.loads(pio.to_json(go.Figure(), validate=False))["layout"].get("template", {})


def figure_dict(fig) -> dict:
    """What a figure draws, as the plain dict Streamlit serialises (ready_figure(fig))."""
    return ready_figure(fig)
