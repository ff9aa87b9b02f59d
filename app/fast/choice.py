"""Browser choices: a slider that only changes what is drawn, answered in the page (app/static/atlas_choice.js is
its browser half), and the charts and texts that follow it.

A highlighted position, an anchor, a pair of dimensions, a layer or a head picked changes nothing the server
computes, yet as a Streamlit slider each move was a round trip: the script reran, figures were built and sent
again. Here the page sends, once, what every position of the slider shows (each chart's traces and titles, each
text), and the move is answered in the browser: the slider publishes its value on a channel, and every chart
(app.fast.chart.plot's `follow`) and text (follow_text) listening to that channel shows its variant for it, with
Plotly.update — no server run.

The value goes into the page's link under the slider's own name (`?anchor=60`), written by the browser with
history.replaceState when the learner moves it, and into this tab's sessionStorage, so a link reproduces it and a page
switch back finds it (and the link keeper there keeps it in the link across the page's runs). The link holds the value the learner asked for: where it does not fit the values offered now (a
shorter table), the view shows the nearest, as a link opened anew would, and the learner's value comes back when it
fits again. The server reads the link once (app.state.keep with browser=True) and keeps the value for the first view;
it writes the link only when the page itself asks anew ("reset this page", a tour stop): then `asked` changes, and the
browser takes the page's value over the learner's last one.

Where the browser cannot answer (app.fast.attention_view.available(): charts drawn by st.plotly_chart, or
ATLAS_ATTENTION_VIEW=server), choice_slider draws a Streamlit slider instead and follow() is None: the page builds
its figures for the slider's value, as before."""
from __future__ import annotations

import base64
import functools
import html
import json
import re
from dataclasses import dataclass, field

import numpy as np
import streamlit as st

from app.fast.chart import module_stub, versioned

MODULE = "atlas_choice.js"
COMPONENT = "atlas_choice"
SENT = "_choice_asked"  # {key: what the page last asked its browser choice for}


def available() -> bool:
    """Whether the browser answers these choices (as it draws the attention view)."""
    from app.fast.attention_view import available as view_available
    return view_available()


@functools.lru_cache(maxsize=1)
def _component():
    return st.components.v2.component(COMPONENT, js=module_stub(MODULE, "__atlasChoiceModule"), isolate_styles=False)


def packed(values) -> dict:
    """Numbers as the browser reads them fast: little-endian float32, base64, with their shape (NaN and infinities
    kept; Plotly leaves a NaN cell or point out)."""
    a = np.ascontiguousarray(np.asarray(values, dtype="<f4"))
    return {"f4": base64.b64encode(a.tobytes()).decode("ascii"), "shape": list(a.shape)}


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_CODE = re.compile(r"`([^`]+)`")
_ITALIC = re.compile(r"(?<![\w*])\*([^*]+)\*(?![\w*])")


def text_html(text: str) -> str:
    """The app's short Markdown (bold, italic, code) as HTML, every other character escaped: what a follow_text
    shows. A token or a learner's text inside is text, never markup."""
    out = html.escape(text, quote=False)
    out = _CODE.sub(r"<code>\1</code>", out)
    out = _BOLD.sub(r"<b>\1</b>", out)
    return _ITALIC.sub(r"<i>\1</i>", out)


@dataclass(frozen=True)
class Choice:
    """A choice's value for the server's first view, the values it can take, and its channel (None: no browser
    answers it, the value is a Streamlit slider's)."""
    value: object
    values: tuple
    channel: str | None
    index: int = 0

    @property
    def live(self) -> bool:
        return self.channel is not None


@dataclass
class Follow:
    """What a chart shows for each value of its choices (one or two: the variant of values (a, b) is
    a * len(b.values) + b). traces: [(trace index, attribute, one value per variant: a numpy array whose first axis
    is the variant, or a list)]; layouts: one relayout dict per variant (Plotly's "title.text" style keys), or None."""
    choices: tuple
    traces: list = field(default_factory=list)
    layouts: list | None = None

    def spec(self) -> dict:
        n = int(np.prod([len(c.values) for c in self.choices]))
        traces = []
        for trace, attr, per in self.traces:
            if isinstance(per, np.ndarray):
                if per.shape[0] != n:
                    raise ValueError(f"{attr} of trace {trace}: {per.shape[0]} variants for {n} values")
                traces.append({"trace": trace, "attr": attr, "packed": packed(per)})
            else:
                if len(per) != n:
                    raise ValueError(f"{attr} of trace {trace}: {len(per)} variants for {n} values")
                traces.append({"trace": trace, "attr": attr, "list": list(per)})
        if self.layouts is not None and len(self.layouts) != n:
            raise ValueError(f"{len(self.layouts)} layouts for {n} values")
        return {"module": versioned(MODULE), "channels": channels(self.choices),
                "initial": variant(self.choices), "traces": traces, "layouts": self.layouts}


def channels(choices) -> list[dict]:
    """The channels a follower listens to, with the values each offers (the browser picks the variant from them)."""
    return [{"name": c.channel, "values": list(c.values)} for c in choices]


def variant(choices) -> int:
    """The variant shown for the choices' server values."""
    index = 0
    for c in choices:
        index = index * len(c.values) + c.index
    return index


def follow(*choices: Choice, traces=(), layouts=None) -> Follow | None:
    """A chart's variants for these choices, or None where no browser answers them (the figure as built stays)."""
    if not choices or not all(c.live for c in choices):
        return None
    return Follow(tuple(choices), list(traces), layouts)


def _spec_bytes(spec: dict) -> bytes:
    return json.dumps(spec, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def choice_slider(label: str, values, *, key: str, url: str | None, default, channel: str, where=None,
                  help: str | None = None, format_value=str) -> Choice:
    """A slider over `values` (numbers, in order) that only changes the drawing. With a browser that answers it
    (available()), a slider drawn in the page whose moves reach the charts and texts that follow `channel` with no
    server run; otherwise a Streamlit slider. Either way the value is kept for the session and read from a link
    (`url`), and "reset this page" puts `default` back. Returns the server's value for the first view."""
    from app.fast.attention_view import page_resets
    from app.state import keep, set_link
    values = tuple(values)
    where = where if where is not None else st
    if len(values) < 2:  # a slider needs two values to choose from
        from app.i18n import t
        where.caption(f"{label}: {format_value(values[0]) if values else '–'} " + t("common.only_one"))
        return Choice(values[0] if values else default, values, None)
    valid = range(int(values[0]), int(values[-1]) + 1) if _is_range(values) else values
    if not available():
        if isinstance(valid, range) and valid.step == 1:
            value = where.slider(label, valid.start, valid.stop - 1, help=help,
                                 **keep(key, default, url=url, valid=valid))
        else:
            value = where.select_slider(label, values, help=help, format_func=format_value,
                                        **keep(key, default, url=url, valid=values))
        return Choice(value, values, None, values.index(value))
    keep(key, default, url=url, valid=valid, browser=True)
    value = st.session_state[key]
    index = values.index(value) if value in values else 0
    asked = f"{asked_value(key)!r}|{page_resets()}"
    sent = st.session_state.setdefault(SENT, {})
    if url is not None and sent.get(key, asked) != asked:  # the page asks anew (a reset, a tour stop): the link says so
        set_link(url, str(asked_value(key)))
    sent[key] = asked
    spec = {"kind": "slider", "label": label, "values": list(values), "labels": [format_value(v) for v in values],
            "index": index, "asked": asked, "param": url, "channel": channel, "help": help or ""}
    if where is st:
        _component()(key=f"atlas-choice-{key}", data=_spec_bytes(spec), height="content")
    else:
        with where:
            _component()(key=f"atlas-choice-{key}", data=_spec_bytes(spec), height="content")
    return Choice(value, values, channel, index)


def follow_text(texts: list[str], *choices: Choice, key: str, fallback=None) -> None:
    """A text that follows choices: texts[v] for variant v (the app's short Markdown). Where no browser answers the
    choices, the server's variant as Markdown (or `fallback(text)`, e.g. st.caption): texts may then hold that one
    only."""
    if not all(c.live for c in choices):
        (fallback or st.markdown)(_served(texts, choices))
        return
    spec = {"kind": "text", "channels": channels(choices),
            "initial": variant(choices), "texts": [text_html(x) for x in texts],
            "small": fallback is st.caption}
    _component()(key=f"atlas-choice-text-{key}", data=_spec_bytes(spec), height="content")


def _served(items: list, choices) -> object:
    """The server's variant of a follower's items: every variant's, or the server's only (a page that computes just
    the value shown where no browser answers the choices)."""
    return items[variant(choices)] if len(items) > 1 else items[0]


def follow_metric(shown: list[tuple[str, str]], *choices: Choice, key: str, help: list[str] | None = None) -> None:
    """A metric that follows choices: shown[v] = (label, value) for variant v, help[v] its tooltip. Where no browser
    answers the choices, st.metric with the server's variant (shown and help may then hold that one only)."""
    v = variant(choices)
    if not all(c.live for c in choices):
        label, value = _served(shown, choices)
        st.metric(label, value, help=_served(help, choices) if help else None)
        return
    texts = [f'<div class="atlas-metric-label">{html.escape(label, quote=False)}</div>'
             f'<div class="atlas-metric-value">{html.escape(value, quote=False)}</div>' for label, value in shown]
    spec = {"kind": "text", "channels": channels(choices),
            "initial": v, "texts": texts, "metric": True, "titles": list(help) if help else None}
    _component()(key=f"atlas-choice-metric-{key}", data=_spec_bytes(spec), height="content")


def follow_table(variants: list[list[dict]], *choices: Choice, key: str) -> None:
    """A table that follows choices: variants[v] = its rows for variant v (app.ui.table's rows). Where no browser
    answers the choices, app.ui.table with the server's variant (variants may then hold that one only)."""
    from app.format import html_table
    from app.ui import table, table_box
    if not all(c.live for c in choices):
        table(_served(variants, choices), key=key)
        return
    spec = {"kind": "text", "channels": channels(choices),
            "initial": variant(choices), "texts": [html_table(rows) for rows in variants], "table": True}
    with table_box(key):
        _component()(key=f"atlas-choice-table-{key}", data=_spec_bytes(spec), height="content")


def _same(values: list) -> bool:
    """Whether the variants of one figure part are all equal (arrays compared as numbers)."""
    first = values[0]
    if isinstance(first, np.ndarray):
        return all(isinstance(v, np.ndarray) and v.shape == first.shape
                   and np.array_equal(v, first, equal_nan=v.dtype.kind == "f") for v in values[1:])
    try:
        return all(not isinstance(v, np.ndarray) and bool(v == first) for v in values[1:])
    except ValueError:  # an array inside a part (a marker's colours): compared as JSON
        text = json.dumps(first, sort_keys=True, default=_plain)
        return all(json.dumps(v, sort_keys=True, default=_plain) == text for v in values[1:])


def _plain(value):
    """A numpy value or array in a figure, as JSON writes it."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def _numbers(values: list) -> np.ndarray | None:
    """The variants of one trace attribute as one float array (first axis: the variant), or None where they are not
    arrays of numbers of one shape (texts, names, single values)."""
    try:
        arrays = [np.asarray(v, dtype=float) for v in values]
    except (TypeError, ValueError):
        return None
    if arrays[0].ndim == 0 or len({a.shape for a in arrays}) != 1:
        return None
    return np.stack(arrays)


def figure_variants(figures: list) -> tuple[list, list | None]:
    """The traces and layouts a follower needs (Follow's), from the figure the page's builder makes for each value of
    a choice (the builder of the server's own figure, so each variant is what the server draws for that value):
    each trace attribute and each layout key that differs between them, per variant; the rest is sent once with the
    figure. Depends on the figures only, so a page keeps it with them (app.resources.shared_view)."""
    traces = []
    for i, trace in enumerate(figures[0]["data"]):
        for attr in trace:
            values = [f["data"][i].get(attr) for f in figures]
            if not _same(values):
                numbers = _numbers(values)
                traces.append((i, attr, numbers if numbers is not None else json.loads(json.dumps(values, default=_plain))))
    layouts = [{} for _ in figures]
    for key in dict.fromkeys(k for f in figures for k in f["layout"]):
        values = [f["layout"].get(key) for f in figures]
        if _same(values):
            continue
        values = json.loads(json.dumps(values, default=_plain))
        others = [{k: v for k, v in value.items() if k != "text"} if isinstance(value, dict) else value
                  for value in values]
        text_only = key == "title" and all(isinstance(v, dict) for v in values) and _same(others)
        for layout, value in zip(layouts, values):  # a title's text alone: the browser writes it in bold
            layout.update({"title.text": value.get("text") or ""} if text_only else {key: value})
    return traces, (layouts if any(layouts) else None)


def asked_value(key: str):
    """The value the learner, a link or a reset gave the input `key` (what it shows may be the nearest that fits)."""
    from app.state import ASKED
    ss = st.session_state
    return ss.get(ASKED, {}).get(key, ss.get(key))


def _is_range(values: tuple) -> bool:
    return all(isinstance(v, int) and not isinstance(v, bool) for v in values) and \
        list(values) == list(range(values[0], values[0] + len(values)))
