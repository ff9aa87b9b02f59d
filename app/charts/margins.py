"""Margins that already hold what a figure draws, so that Plotly lays it out once.

Streamlit's chart theme turns on Plotly's automatic margins for every axis. Plotly then draws the figure,
measures its tick labels, axis titles, colour bars and legend, and when they need more room than the figure's
margins give, draws the whole figure again with the larger margins. Every figure of the app was drawn twice that
way (`python bench/margins.py`: 59 of 59 before), and switching automatic margins off made the chart pages'
controls about a third faster in the browser (docs/benchmarks.md) — but cut their labels off.

So the automatic margins stay (they are still the safety net: a label wider than estimated only costs the second
pass), and `fit_margins` gives each side the room its labels are estimated to need beforehand, from the text the
figure holds: category labels and tick texts, numeric ranges formatted the way Plotly formats its ticks, axis
titles, colour bars and a legend under the plot. Widths are estimated from the characters (app.charts.text_width,
at the theme's 12 px ticks and 14 px titles). The constants were read
off the figures as Chromium draws them (bench/margins.py prints, for every figure, the room left on each side
and whether Plotly had to widen one)."""
from __future__ import annotations

import base64
import math
import re

import numpy as np

from app.charts.text_width import TICK_PX, text_px

TITLE_PX = 14                # Streamlit's theme: axis titles 0.875rem (tick labels: text_width.TICK_PX)
LINE = 1.35                  # a line of text is this many font sizes high
SAFETY = 4                   # px added to every estimated side
_AXIS = re.compile(r"^([xy])axis(\d*)$")
TICK_PLOT_PX = 700           # the plot width assumed for whether x labels fit side by side (a chart in the main
                             # column of a laptop's window; wider, Plotly may leave them level and the room goes unused)


def _lines(text) -> int:
    return len(re.split(r"<br\s*/?>", str(text), flags=re.I)) if text else 0


def _values(v):
    """A trace property's values as a flat list or numpy array (plotly's typed-array records decoded)."""
    if v is None:
        return None
    if isinstance(v, dict) and "bdata" in v:
        dtype = {"f8": np.float64, "f4": np.float32, "i1": np.int8, "u1": np.uint8, "i2": np.int16,
                 "u2": np.uint16, "i4": np.int32, "u4": np.uint32}.get(v.get("dtype"), np.float64)
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=dtype)
    if isinstance(v, np.ndarray):
        return v.ravel()
    if isinstance(v, (list, tuple)):
        flat = []
        for item in v:
            if isinstance(item, (list, tuple, np.ndarray)):
                flat.extend(np.asarray(item, dtype=object).ravel().tolist())
            else:
                flat.append(item)
        return flat
    return None


def _numbers(values) -> np.ndarray:
    if values is None:
        return np.zeros(0)
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        arr = values.astype(float)
    else:
        arr = np.array([x for x in values if isinstance(x, (int, float, np.number)) and not isinstance(x, bool)],
                       dtype=float)
    return arr[np.isfinite(arr)]


def _strings(values) -> list[str]:
    if values is None or isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        return []
    return [x for x in values if isinstance(x, str)]


def _nice_step(span: float, count: int) -> float:
    raw = span / count
    base = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 5, 10):
        if m * base >= raw:
            return m * base
    return 10 * base


def _format_tick(v: float, step: float) -> str:
    """A linear tick as Plotly writes it by default: up to the step's decimals, k/M/G from 10,000 up, a true
    minus."""
    av = abs(v)
    if av >= 1e4:
        for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
            if av >= div:
                text = f"{av / div:.3g}{suffix}"
                break
    else:
        decimals = max(0, -math.floor(math.log10(step) + 1e-9)) if step < 1 else 0
        text = f"{av:.{decimals}f}"
        if "." in text:  # plotly writes 0.001 and 0, not 0.0010 and 0.0000
            text = text.rstrip("0").rstrip(".")
    return ("−" + text) if v < 0 and text.strip("0.") else text


def numeric_ticks(lo: float, hi: float, tickformat: str | None = None) -> list[str]:
    """The tick texts Plotly may write on a linear axis from lo to hi: those of 5 and of 10 ticks (its choice
    depends on the axis' length in the browser), or the two ends in the axis' d3 format when it has one."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return []
    if tickformat:
        return [_d3(lo, tickformat), _d3(hi, tickformat), _d3((lo + hi) / 2, tickformat)]
    if hi <= lo:
        return [_format_tick(lo, abs(lo) / 10 or 1)]
    out = []
    for count in (5, 10):
        step = _nice_step(hi - lo, count)
        first = math.ceil(lo / step - 1e-9)
        for k in range(first, first + count + 2):
            v = k * step
            if v > hi + step * 1e-6:
                break
            out.append(_format_tick(0.0 if abs(v) < step * 1e-9 else v, step))
    return out


def _d3(v: float, fmt: str) -> str:
    m = re.fullmatch(r"[,]?\.(\d+)([f%e])", fmt)
    if not m:
        return f"{v:.4g}"
    digits, kind = int(m.group(1)), m.group(2)
    if kind == "%":
        return f"{v * 100:.{digits}f}%"
    return f"{v:.{digits}{kind}}"


def _log_ticks(lo: float, hi: float, axis: dict) -> list[str]:
    """Powers of ten (dtick 1): 10 with its exponent as a superscript, or 1, 10, 100 … under another format."""
    if lo <= 0 or hi <= 0:
        return []
    exps = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    if axis.get("exponentformat") == "power":
        # the superscript exponent: a digit's width per character, and one more for the space Plotly sets before it
        # (a log step axis ending at 10⁵ needed 2 px more on the right than one digit per character gave)
        return ["10" + "8" * (len(str(e)) + 1) for e in exps]
    return [_format_tick(10.0 ** e, 10.0 ** e) for e in exps]


def _traces_on(data, letter: str, name: str):
    ref = letter + name[5:] if name[5:] else letter  # xaxis2 -> x2
    return [tr for tr in data if (tr.get(f"{letter}axis") or letter) == ref]


def axis_labels(data: list[dict], layout: dict, name: str) -> list[str]:
    """The tick texts an axis (`xaxis`, `yaxis2` …) may show."""
    axis = layout.get(name) or {}
    letter = name[0]
    if axis.get("showticklabels") is False or axis.get("visible") is False:
        return []
    if axis.get("ticktext") is not None:
        return [str(x) for x in _values(axis["ticktext"]) or []]
    traces = _traces_on(data, letter, name)
    texts, nums = [], []
    for tr in traces:
        kind = tr.get("type", "scatter")
        vals = _values(tr.get(letter))
        if vals is None and kind in ("heatmap", "image"):  # a heatmap without x/y: its columns or rows numbered
            z = tr.get("z")
            shape = np.shape(z) if not isinstance(z, dict) else tuple(int(s) for s in str(z.get("shape", "0")).split(","))
            if len(shape) >= 2:
                n = shape[1] if letter == "x" else shape[0]
                vals = np.arange(n, dtype=float)
        if vals is None and kind == "histogram":  # its counts (or shares) are made by plotly
            other = _values(tr.get("y" if letter == "x" else "x"))
            n = len(other) if other is not None else 0
            vals = np.array([0.0, 1.0 if tr.get("histnorm") else float(n)])
        if vals is None and kind in ("scatter", "bar"):
            other = _values(tr.get("y" if letter == "x" else "x"))
            vals = np.arange(len(other), dtype=float) if other is not None else None
        texts += _strings(vals)
        nums.append(_numbers(vals))
    if axis.get("type") == "category" or texts:
        return [str(t) for t in texts] + ([str(int(v)) if float(v).is_integer() else str(v)
                                           for arr in nums for v in arr] if axis.get("type") == "category" else [])
    allnums = np.concatenate(nums) if nums else np.zeros(0)
    rng = axis.get("range")
    if rng is not None and len(rng) == 2 and all(isinstance(r, (int, float)) for r in rng):
        lo, hi = sorted(float(r) for r in rng)
        if axis.get("type") == "log":
            lo, hi = 10 ** lo, 10 ** hi
    elif allnums.size:
        lo, hi = float(allnums.min()), float(allnums.max())
    else:
        return []
    if axis.get("type") == "log":
        return _log_ticks(lo, hi, axis)
    return numeric_ticks(lo, hi, axis.get("tickformat"))


def _title(obj) -> str | None:
    """An axis' or colour bar's title text; "" for a title set to no text, which Plotly still makes room for
    (its standoff and a line); None without one."""
    t = obj.get("title") if isinstance(obj, dict) else None
    if isinstance(t, dict):
        t = t.get("text")
    return None if t is None else str(t)


def _anchor_domain(layout: dict, name: str) -> tuple[float, float]:
    """The domain, across the axis, of the axis it is anchored to (where its labels sit)."""
    axis = layout.get(name) or {}
    other = "y" if name[0] == "x" else "x"
    anchor = axis.get("anchor") or other
    if anchor == "free":
        pos = axis.get("position", 0)
        return pos, pos
    key = other + "axis" + anchor[1:]
    dom = (layout.get(key) or {}).get("domain") or [0, 1]
    return float(dom[0]), float(dom[1])


def _colorbar_px(tr: dict) -> float:
    """The width of a trace's colour bar with its tick labels and title (0 without one): a heatmap's, or a
    scatter's markers' when they show their scale."""
    kind = tr.get("type", "scatter")
    if kind in ("heatmap", "contour", "histogram2d"):
        if tr.get("showscale") is False or tr.get("coloraxis"):
            return 0.0
        scaled, values = tr, tr.get("z")
    elif isinstance(tr.get("marker"), dict) and tr["marker"].get("showscale", "colorbar" in tr["marker"]):
        scaled, values = tr["marker"], tr["marker"].get("color")
    else:
        return 0.0
    bar = scaled.get("colorbar") or {}
    z = _numbers(_values(values))
    lo = scaled.get("zmin", scaled.get("cmin"))
    hi = scaled.get("zmax", scaled.get("cmax"))
    lo = float(lo) if lo is not None else (float(z.min()) if z.size else 0.0)
    hi = float(hi) if hi is not None else (float(z.max()) if z.size else 1.0)
    ticks = numeric_ticks(lo, hi, bar.get("tickformat"))
    width = (bar.get("thickness") or 30) + 18 + max((text_px(t) for t in ticks), default=0)
    return max(width, text_px(_title(bar) or "", TITLE_PX) + 10)


def _legend_items(data: list[dict], layout: dict) -> list[str]:
    shown = [tr for tr in data if tr.get("showlegend") is not False and tr.get("name")]
    if layout.get("showlegend") is False or (len(shown) < 2 and layout.get("showlegend") is not True):
        return []
    return [str(tr["name"]) for tr in shown]


def fit_margins(data: list[dict], layout: dict) -> dict | None:
    """The figure's margins grown to hold its labels (never smaller than the ones it has), or None when it
    leaves its margins to Plotly (autoexpand off) or needs nothing more."""
    return fit_layout(data, layout).get("margin")


def fit_layout(data: list[dict], layout: dict) -> dict:
    """What the figure's layout needs changed, as {"margin": fit_margins' margins, "legend": the place of a
    legend under the plot}: either left out when it needs nothing. A legend under the plot goes right below the
    x axis's tick labels and title: at a fixed share of the plot's height (legend_below's -0.18) it covered the
    axis title of every plot shorter than about 300 px (the recipe page's loss curves, the why page's costs)."""
    margin = dict(layout.get("margin") or {})
    if margin.get("autoexpand") is False:
        return {}
    # unset sides: Streamlit's theme sets left and right to 0, Plotly's default top and bottom are 80 px
    given = {s: float(margin[s]) if margin.get(s) is not None else (0.0 if s in "lr" else 80.0) for s in "lrtb"}
    need = dict.fromkeys("lrtb", 0.0)
    names = {m.group(0) for key in layout if (m := _AXIS.match(key))}
    for tr in data:
        if tr.get("type", "scatter") in ("pie", "table", "sankey", "parcoords"):
            continue
        for letter in "xy":
            ref = tr.get(f"{letter}axis") or letter
            names.add(f"{letter}axis{ref[1:]}")
    for name in sorted(names):
        axis = layout.get(name) or {}
        if axis.get("visible") is False or axis.get("overlaying"):
            continue
        ticks = axis_labels(data, layout, name)
        tick_w = max((text_px(t) for t in ticks), default=0.0)
        title = _title(axis)
        lo, hi = _anchor_domain(layout, name)
        traces = _traces_on(data, name[0], name)
        category = axis.get("type") == "category" or any(_strings(_values(tr.get(name[0]))) for tr in traces)
        heat = any(tr.get("type") in ("heatmap", "image") for tr in traces)
        titled = title is not None
        title_px = TITLE_PX * LINE * max(1, _lines(title)) if titled else 0.0
        if name[0] == "y":
            side = axis.get("side") or "left"
            if (side == "left" and lo > 0.01) or (side == "right" and hi < 0.99):
                continue
            room = tick_w + (27 if heat else 20) + (title_px + 14 if titled else 0)
            need["l" if side == "left" else "r"] = max(need["l" if side == "left" else "r"], room)
        else:
            side = axis.get("side") or "bottom"
            if (side == "bottom" and lo > 0.01) or (side == "top" and hi < 0.99):
                continue
            angle = abs(float(axis.get("tickangle") or 0)) if axis.get("tickangle") != "auto" else 0.0
            tick_h = TICK_PX * LINE * max((_lines(t) for t in ticks), default=1) if ticks else 0.0
            if not angle and len(ticks) > 1:  # Plotly turns labels that would touch: 30°, or 90° if still too close
                apart = TICK_PLOT_PX * (hi - lo) / len(ticks)
                if tick_w + 6 > apart:
                    angle = 30.0 if apart >= tick_h / math.sin(math.radians(30)) else 90.0
            if angle and ticks:
                a = math.radians(angle)
                tick_h = tick_w * math.sin(a) + tick_h * math.cos(a)
            elif ticks and not category:  # the last number is centred on the plot's right edge
                need["r"] = max(need["r"], tick_w / 2 + 6)
            room = tick_h + (23 if heat else 14) + (title_px + 16 if titled else 0)
            key = "b" if side == "bottom" else "t"
            need[key] = max(need[key], room)
    bars = [_colorbar_px(tr) for tr in data]
    if any(bars):
        need["r"] = max(need["r"], max(bars) + 28)
    items = _legend_items(data, layout)
    legend = layout.get("legend") or {}
    below_axis = None
    if items and legend.get("orientation") == "h" and float(legend.get("y", 1.02)) < 0:
        row_px, rows, width = TICK_PX * 1.6, 1, 0.0
        for item in items:  # assume a plot ~380 px wide (a figure in a column): the legend wraps past that
            w = text_px(item) + 46
            if width and width + w > 380:
                rows, width = rows + 1, 0.0
            width += w
        legend_h = rows * row_px + 10
        below_axis = need["b"] + SAFETY  # the legend's top: under the x axis's labels and title
        need["b"] = max(need["b"], below_axis + legend_h + 8)
    out = {}
    for s in "lrtb":
        want = math.ceil(need[s] + SAFETY) if need[s] else 0
        out[s] = max(int(round(given[s])), want)
    fitted = {} if all(out[s] == given[s] for s in "lrtb") else {"margin": {**margin, **out}}
    if below_axis is not None:  # in plot heights, as the legend's y is given: the plot is what the margins leave
        plot_h = max(50.0, float(layout.get("height") or 450) - out["t"] - out["b"])
        fitted["legend"] = {"y": -round(below_axis / plot_h, 4)}
    return fitted
