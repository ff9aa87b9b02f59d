"""One palette, one attention colour scale, one escaping of labels, shared layout helpers."""
from __future__ import annotations

import base64
import functools
import html
import json

import numpy as np
import plotly.graph_objects as go
from _plotly_utils.utils import plotlyjsShortTypes, to_typed_array_spec
from _plotly_utils.basevalidators import is_homogeneous_array

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


def figure(data: list[dict], layout: dict) -> go.Figure:
    """A figure from traces (dicts with their "type") and a layout written in plotly's own form (a title as
    dict(text=…)), built without plotly's property checks: they took most of a build (a head view: 12 of 17 ms;
    11% of the server's time with 4 learners typing sentences). What the checks would still change is done
    here: unset (None) properties are dropped and a named colour scale becomes plotly's list of colours.
    tests/app/test_charts.py builds every builder's figure again with the checks on and requires the same JSON,
    so nothing misspelt or half-written gets out."""
    traces = []
    for trace in data:
        trace = _set_only(trace)
        if isinstance(trace.get("colorscale"), str):
            trace["colorscale"] = named_scale(trace["colorscale"])
        traces.append(trace)
    return DraftFigure(traces, _set_only(layout))


class DraftFigure(go.Figure):
    """A figure that holds its traces and layout as the dicts it was given until something reads or changes it
    as a plotly figure: only then is plotly's figure made (its constructor and `to_dict`, a deep copy, were 9% of
    the server's time with learners typing new sentences). `ready_figure` draws an untouched draft straight from
    its dicts, with the same JSON as the plotly figure (tests/app/test_charts.py, every builder)."""

    def __init__(self, data: list[dict], layout: dict):  # noqa: plotly's constructor runs on first use
        self.__dict__["_atlas_draft"] = (data, layout)

    def __getattr__(self, name):  # only for what the instance lacks: everything plotly's constructor sets
        draft = self.__dict__.pop("_atlas_draft", None)
        if draft is None:
            raise AttributeError(name)
        go.Figure.__init__(self, data=draft[0], layout=draft[1], _validate=False)
        return getattr(self, name)


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
    """A colour scale's name as plotly's checks write it (its colours, not the name: plotly.js knows other
    scales under some of the same names)."""
    return tuple(tuple(stop) for stop in go.Heatmap(colorscale=name).to_plotly_json()["colorscale"])


def legend_below() -> dict:
    """Legends go under the plot: above it they collide with the title and the toolbar."""
    return dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left")


def lift_title(fig: go.Figure, extra: int = 36) -> go.Figure:
    """Heatmaps with the key axis on top: move the figure title above the axis title. A DraftFigure stays one:
    its layout dict gets the change as update_layout would merge it (made into a plotly figure for the change,
    a heatmap's build took 5.5 ms instead of ~1)."""
    change = dict(title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=10), font=dict(size=14)))
    draft = fig.__dict__.get("_atlas_draft")
    if draft is None:
        top = fig.layout.margin.t if fig.layout.margin.t is not None else 30
        fig.update_layout(margin=dict(t=top + extra), height=(fig.layout.height or 400) + extra, **change)
        return fig
    layout = draft[1]  # (a draft's title is already dict(text=…): tests/app/test_charts.py checks every builder)
    top = (layout.get("margin") or {}).get("t")
    change.update(margin=dict(t=(top if top is not None else 30) + extra), height=(layout.get("height") or 400) + extra)
    return amend(fig, change)


def amend(fig: go.Figure, layout: dict | None = None, traces: dict[int, dict] | None = None,
          every_trace: dict | None = None) -> go.Figure:
    """A page's change to a builder's figure, as fig.update_layout(**layout), fig.update_traces(change,
    selector=i) for each i: change in `traces`, and fig.update_traces(every_trace) make it, written in plotly's
    own form (xaxis=dict(range=…), not xaxis_range=…). A DraftFigure stays a draft: its dicts get the change
    (each update_* call made the plotly figure and checked all of it again: 5–15 ms a change)."""
    draft = fig.__dict__.get("_atlas_draft")
    if draft is None:
        if layout:
            fig.update_layout(**layout)
        for i, change in (traces or {}).items():
            fig.update_traces(change, selector=i)
        if every_trace:
            fig.update_traces(every_trace)
        return fig
    data, old = draft
    if traces or every_trace:
        data = [_merged(_merged(tr, (traces or {}).get(i, {})), every_trace or {}) for i, tr in enumerate(data)]
    fig.__dict__["_atlas_draft"] = (data, _merged(old, layout or {}))
    return fig


def _merged(into: dict, change: dict) -> dict:
    """`into` with `change` merged in, nested settings key by key (as plotly's update_layout does); new dicts,
    so that a dict the builder shares (a cached margin) is never changed."""
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


class ReadyFigure(go.Figure):
    """A finished figure reduced to what st.plotly_chart reads from it: its dict, made once, with the toolbar
    room added and every value already a JSON value (lists, strings, numbers; arrays as plotly's own base64
    records). st.plotly_chart calls `to_dict()` on every draw and serialises the result: on a live figure that
    is a deep copy that packs every array again, then a walk that converts numpy values one by one (13 ms for
    the head view here, on every rerun of every session); on this dict it takes ~0.3 ms, and the JSON Streamlit
    sends is the same, byte for byte (tests/app/test_load_cache.py). Made by `ready_figure(fig)`, it is only drawn
    (and may be shared by every session, see app.resources.shared_figure): it has no traces or layout objects
    to read or change, and `figure_dict(fig)` reads its dict."""

    def __init__(self, fig_dict: dict):  # plotly's constructor (validation, the template) is not needed
        self.__dict__["_atlas_dict"] = fig_dict

    def to_dict(self) -> dict:
        return self.__dict__["_atlas_dict"]

    def __repr__(self) -> str:
        return f"ReadyFigure({json.dumps(self.to_dict())[:120]}…)"


def ready_figure(fig) -> ReadyFigure:
    """A plotly figure as a ReadyFigure (one already is, and comes back as it is): its dict through plotly's
    JSON writer once, read back as plain values, with the toolbar room (toolbar_room)."""
    if isinstance(fig, ReadyFigure):
        return fig
    import plotly.io as pio
    draft = fig.__dict__.get("_atlas_draft")
    if draft is not None:  # an untouched DraftFigure: its dicts as plotly's to_dict writes them
        fitted = _fitted_layout(draft[0], draft[1])
        d = json.loads(pio.to_json({"data": _packed(draft[0]), "layout": _packed(draft[1])}, validate=False))
        d["layout"].setdefault("template", _default_template(pio.templates.default))
    else:
        plain = fig.to_dict()
        fitted = _fitted_layout(plain.get("data") or [], plain.get("layout") or {})
        d = json.loads(pio.to_json(plain, validate=False))
    layout = d.setdefault("layout", {})
    if "margin" in fitted:  # room for the labels before Plotly measures them: the figure is laid out once
        layout["margin"] = fitted["margin"]
    if "legend" in fitted:
        layout["legend"] = {**(layout.get("legend") or {}), **fitted["legend"]}
    toolbar_room(layout)
    return ReadyFigure(d)


def _fitted_layout(data, layout) -> dict:
    """app.charts.margins.fit_layout, which only saves the browser a second layout pass and puts a legend under
    the x axis: a figure it cannot read keeps its own margins and legend (and Plotly's automatic margins) rather
    than failing the page. tests/app/test_margins.py calls it unguarded on every builder's figure."""
    from app.charts.margins import fit_layout
    try:
        return fit_layout(data, layout)
    except Exception:  # noqa: BLE001
        return {}


def _packed(props):
    """A copy of a figure's dicts with every property's array as plotly's typed-array record ({"dtype", "bdata",
    "shape"}), as plotly's to_dict writes it. Numpy float and small-int arrays are packed here directly (plotly's
    own packer first wraps each array for dataframe libraries: 0.25 ms an array, 50 arrays in a head view), other
    arrays by plotly; arrays inside lists stay as they are, as plotly leaves them."""
    if isinstance(props, dict):
        return {key: value if key in ("geojson", "layer", "layers", "range") else _packed_value(value)
                for key, value in props.items()}
    if isinstance(props, (list, tuple)):
        return [_packed(value) for value in props]
    return props


def _packed_value(value):
    if isinstance(value, np.ndarray) and value.ndim and value.size and str(value.dtype) in plotlyjsShortTypes:
        record = {"dtype": plotlyjsShortTypes[str(value.dtype)],
                  "bdata": base64.b64encode(np.ascontiguousarray(value)).decode("ascii")}
        if value.ndim > 1:
            record["shape"] = str(value.shape)[1:-1]
        return record
    if is_homogeneous_array(value):
        return to_typed_array_spec(value)
    return _packed(value)


@functools.lru_cache(maxsize=4)
def _default_template(name) -> dict:
    """The layout template plotly gives a figure without one, by the default template's `name` (shared, read
    only: ready dicts are only drawn)."""
    import plotly.io as pio
    return json.loads(pio.json.to_json_plotly(go.Figure().to_dict()["layout"].get("template", {})))


def figure_dict(fig) -> dict:
    """What a figure draws, as the plain dict Streamlit serialises (ready_figure(fig).to_dict())."""
    return ready_figure(fig).to_dict()
