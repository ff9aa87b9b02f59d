"""Curves: one bar builder, one line builder, one histogram builder, and the positional circle."""
from __future__ import annotations

import math

import numpy as np

from app.charts.text_width import text_px
from app.format import number
from app.charts.style import (TITLE_LINE_PX, Figure, amend, colour, esc, figure, labels as escaped_labels, legend_below, margins,
                              named_scale, to_np, wrapped)


def _axis(log: bool, values=None, most: int = 8) -> dict:
    """An axis for `values`. Whole numbers a few apart (token positions) are labelled one by one. Log axes label
    only powers of ten, written as powers (no '2 5 2' minor ticks, no '1µ'): every one, or every second, third …
    so that at most `most` labels share the axis (the softmax gradient's 18 decades on a plot 150 px high were
    written over each other)."""
    try:
        values = np.asarray(values, dtype=float).ravel() if values is not None else None
    except (TypeError, ValueError):  # words, not numbers
        values = None
    if not log:
        v = values if values is not None else np.array([])
        whole = v.size and np.isfinite(v).all() and (v == np.round(v)).all() and v.max() - v.min() <= 12
        return dict(type="linear", dtick=1) if whole else dict(type="linear")  # positions 1 … 4, not 1.5, 2.5
    step = 1
    if values is not None:
        v = values[np.isfinite(values) & (values > 0)]
        if v.size:
            step = max(1, math.ceil((math.log10(v.max()) - math.log10(v.min())) / max(1, most)))
    return dict(type="log", dtick=step, exponentformat="power")


def log_coordinate(value: float) -> float:
    """Annotations on a log axis take log10 coordinates (shapes such as add_vline take data ones)."""
    return math.log10(value)


def bar_chart(labels, values, *, title="", x_title="", y_title="", y_range=None, decimals=3, colors=None,
              horizontal=False, height=None, text_outside=False) -> Figure:
    """One bar per label with its value written on it. `colors`: one colour or one per bar; `y_range`:
    the value axis range, or "fit" for 0…max with room for the text above the bars."""
    vals = to_np(values).ravel()
    title, x_title, y_title = esc(title), esc(x_title), esc(y_title)
    names = escaped_labels(labels)  # a category axis would merge a repeated token into one bar
    text = [number(v, f".{decimals}f") for v in vals]
    marker = colors if colors is not None else colour(0)
    value_range = [0, max(1e-9, float(vals.max(initial=0))) * 1.18] if y_range == "fit" else y_range
    position = "outside" if text_outside else "auto"
    bar = dict(type="bar", marker=dict(color=marker), text=text, textposition=position)
    if horizontal:  # the figure is made in one go: each update_* call would validate the whole layout again
        bar.update(x=vals, y=names, orientation="h")
        axes = dict(yaxis=dict(autorange="reversed", type="category", title=dict(text=y_title)),
                    xaxis=dict(title=dict(text=x_title), range=value_range))
        height = height or max(240, 26 * len(names) + 80)
    else:
        bar.update(x=names, y=vals)
        axes = dict(xaxis=dict(type="category", title=dict(text=x_title)),
                    yaxis=dict(title=dict(text=y_title), range=value_range))
        height = height or 300
    return figure([bar], dict(**axes, title=dict(text=title), height=height, margin=margins(title, 50 if title else 20)))


def line_chart(x, series: dict, *, title="", x_title="", y_title="", log_x=False, log_y=False, mode="lines",
               vline=None, vline_label="", markers: dict | None = None, height=380) -> Figure:
    """Several named curves over a shared x. `vline` draws a dashed marker at that x; `markers`
    ({name: (xs, ys, texts)}) draws labelled points (e.g. each schedule's peak)."""
    xs = to_np(x)
    title, x_title, y_title = esc(title), esc(x_title), esc(y_title)
    traces = [dict(type="scatter", x=xs, y=to_np(ys), mode=mode, name=esc(name), line=dict(color=colour(i), width=2))
              for i, (name, ys) in enumerate(series.items())]
    values = np.concatenate([to_np(v).ravel() for v in series.values()]) if series else np.array([])
    if vline is not None:  # a trace, not a shape: shapes and annotations misplace x on log axes
        ys = values[np.isfinite(values) & ((values > 0) if log_y else True)]
        lo, hi = (ys.min(), ys.max()) if ys.size else (0.0, 1.0)
        traces.append(dict(type="scatter", x=[vline, vline], y=[lo, hi], mode="lines", name=esc(vline_label),
                           line=dict(color="#555", dash="dash", width=1.5)))
    y_axis = dict(title=dict(text=y_title), **_axis(log_y, values if log_y else None, most=max(3, (height - 240) // 30)))
    points = []
    for name, (mx, my, texts) in (markers or {}).items():
        traces.append(dict(type="scatter", x=list(mx), y=list(my), name=esc(name), mode="markers",
                           marker=dict(size=10, symbol="star", color="gray")))
        points += [(float(a), float(b), esc(c)) for a, b, c in zip(mx, my, texts)]
    notes = []
    if points and not log_y:  # every group's labels kept apart from each other
        every = np.concatenate([values, [y for _, y, _ in points]])
        notes, top = point_labels(points, xs, every[np.isfinite(every)], log_x=log_x, plot_h=max(100, height - 240))
        if top is not None:
            y_axis["range"] = top
    # made in one go: each add_trace / update_* call would validate the whole figure again
    return figure(traces, dict(
        xaxis=dict(title=dict(text=x_title), **_axis(log_x, xs)), yaxis=y_axis, annotations=notes or None,
        title=dict(text=title),
        height=height, margin=margins(title, 50 if title else 20), legend=legend_below()))


def anchor_figure(measured, formula, q, names: tuple, anchor: int, *, title: str, x_title: str, y_title: str) -> Figure:
    """Two curves over q (a measured one, thick, under its formula, thin and dashed, which lies exactly on it) and the
    anchor position as add_vline draws it: a dotted grey line over the plot's height. The formula in the palette's
    second colour: black vanished from the legend on the dark theme."""
    fig = line_chart(q, dict(zip(names, (measured, formula))), x_title=x_title, y_title=y_title, title=title)
    return amend(fig, dict(shapes=[dict(type="line", x0=anchor, x1=anchor, xref="x", y0=0, y1=1, yref="y domain",
                                        line=dict(color="gray", dash="dot"))]),
                 traces={0: dict(line=dict(width=5)), 1: dict(line=dict(color=colour(1), width=1.5, dash="dash"))})


def cost_figure(over_n: dict, cost: dict, n: int, d: int, titles: tuple) -> Figure:
    """Each layer's cost against n (log-log), with a dotted line at n = d (where self-attention and a recurrent layer
    cost the same) and a dashed one at the learner's n, each named at the plot's edge. Both lines grey: a black one
    vanished on the dark theme."""
    fig = line_chart(over_n["n"], cost, log_x=True, log_y=True, x_title="n", y_title=titles[0], title=titles[1])
    # shapes take data coordinates on a log axis, annotations take log10 coordinates; one layout update for
    # all four (what add_vline and add_annotation draw, at a quarter of their cost)
    line = dict(type="line", xref="x", y0=0, y1=1, yref="y domain")
    return amend(fig, dict(
        shapes=[{**line, "x0": d, "x1": d, "line": dict(color="gray", dash="dot")},
                {**line, "x0": n, "x1": n, "line": dict(color="gray", dash="dash")}],
        annotations=[dict(x=log_coordinate(d), y=1, yref="paper", text="n = d", showarrow=False, xanchor="left",
                          yanchor="top"),
                     dict(x=log_coordinate(n), y=0, yref="paper", text=f"n = {n:,}", showarrow=False,
                          xanchor="left", yanchor="bottom")]))


LABEL_PX, LABEL_LINE_PX = 13, 16  # a 12 px label measured as 13 px text (text_width.text_px: a little wider than it
# is, so labels are kept apart with room to spare), a line's height
LABEL_ABOVE_PX = 18  # from a point to the middle of its label
NARROW_PLOT_PX = 560  # the labels are spread apart for a plot this wide (a chart in a narrow window)


def point_labels(points, xs, ys, *, log_x: bool, plot_h: int) -> tuple[list[dict], list[float] | None]:
    """Labels for marked points (x, y, text), as annotations: each above its point, and raised a line at a time
    while it would cover a label placed before it (points of equal height close together, such as the peaks of
    two schedules with the same d_model · warmup), with a thin line down to its point. Returns the annotations
    and the y range that leaves room for the highest label (None: the plot's own range has room)."""
    fx = math.log10 if log_x else float
    shown = [(x, y, text) for x, y, text in sorted(points, key=lambda p: (-p[1], p[0])) if x > 0 or not log_x]
    xs = xs[xs > 0] if log_x else xs
    x0, x1 = (fx(float(xs.min())), fx(float(xs.max()))) if xs.size else (0.0, 1.0)
    lo, hi = (float(ys.min()), float(ys.max())) if ys.size else (0.0, 1.0)
    top = hi
    for _ in range(4):  # a higher range brings the points closer together: place them again until it holds
        placed, lifts, need = [], [], hi
        for x, y, text in shown:
            cx = (fx(x) - x0) / ((x1 - x0) or 1.0) * NARROW_PLOT_PX
            cy = (y - lo) / ((top - lo) or 1.0) * plot_h
            half = (text_px(text, LABEL_PX) + 6) / 2
            lift = LABEL_ABOVE_PX
            while any(abs(cx - px) < half + ph + 4 and abs(cy + lift - py) < LABEL_LINE_PX for px, py, ph in placed):
                lift += LABEL_LINE_PX
            placed.append((cx, cy + lift, half))
            lifts.append(lift)
            room = 1 - (lift + LABEL_LINE_PX) / plot_h  # the share of the plot's height below the label's top
            if room > 0:
                need = max(need, lo + (y - lo) / room)
        if need <= top * (1 + 1e-9):
            break
        top = need
    notes = [dict(x=fx(x), y=y, text=text, showarrow=True, arrowhead=0, arrowwidth=1, arrowcolor="#888", standoff=7,
                  ax=0, ay=-lift) for (x, y, text), lift in zip(shown, lifts)]
    pad = 0.03 * ((top - lo) or 1.0)
    return notes, ([lo - pad, top + pad] if top > hi else None)


def histogram_overlay(series: dict, *, title="", x_title="", y_title="", nbins=80, height=360) -> Figure:
    """Overlaid, semi-transparent histograms of several samples, normalised to probability density."""
    title, x_title, y_title = esc(title), esc(x_title), esc(y_title)
    traces = [dict(type="histogram", x=to_np(values), name=esc(name), nbinsx=nbins, opacity=0.6,
                   histnorm="probability density", marker=dict(color=colour(i)))
              for i, (name, values) in enumerate(series.items())]
    return figure(traces, dict(barmode="overlay", title=dict(text=title), height=height,
                               xaxis=dict(title=dict(text=x_title)), yaxis=dict(title=dict(text=y_title)),
                               margin=margins(title, 50 if title else 20), legend=legend_below()))


def _arrows(s, c, p: int, k: int, pos_label: str) -> list[dict]:
    """The two arrows of circle_figure, from the centre to position p and to p + k (escaped label), or two empty
    traces where either falls outside the positions drawn."""
    if not (0 <= p < len(s) and 0 <= p + k < len(s)):
        return [dict(x=[], y=[], text=[]), dict(x=[], y=[], text=[])]
    return [dict(x=[0, float(s[idx])], y=[0, float(c[idx])], text=["", f"{pos_label} {idx}"]) for idx in (p, p + k)]


def circle_arrows(sin_vals, cos_vals, positions, k: int, pos_label: str) -> list[tuple]:
    """circle_figure's arrows for each highlighted position p in `positions`: app.fast.choice.follow's traces."""
    s, c, label = to_np(sin_vals), to_np(cos_vals), esc(pos_label)
    every = [_arrows(s, c, p, k, label) for p in positions]
    return [(2 + i, attr, [arrows[i][attr] for arrows in every]) for i in (0, 1) for attr in ("x", "y", "text")]


def circle_figure(sin_vals, cos_vals, p: int, k: int, *, title="", pos_label="position", height=420) -> Figure:
    """The (sin, cos) pair of every position as a point on the unit circle; position p and p+k
    highlighted with an arrow: shifting by k turns the point by the same angle everywhere."""
    s, c = to_np(sin_vals), to_np(cos_vals)
    title, pos_label = wrapped(esc(title), 17), esc(pos_label)  # drawn in a column beside the rotation matrix
    lines = title.count("<br>")
    height += TITLE_LINE_PX * lines
    n = len(s)
    th = np.linspace(0, 2 * np.pi, 200)
    traces = [dict(type="scatter", x=np.sin(th), y=np.cos(th), mode="lines", line=dict(color="#cccccc"),
                   hoverinfo="skip", showlegend=False),
              dict(type="scatter", x=s, y=c, mode="markers",
                   marker=dict(size=6, color=np.arange(n), colorscale=named_scale("Viridis"),
                               colorbar=dict(title=dict(text=pos_label))),
                   text=[f"{pos_label} {i}" for i in range(n)], hovertemplate="%{text}<extra></extra>",
                   showlegend=False)]
    # the arrows to p and p + k: always two traces (empty where p + k falls outside), so that a browser choice of p
    # (circle_arrows) has the same traces to change
    for i, arrow in enumerate(_arrows(s, c, p, k, pos_label)):
        traces.append(dict(type="scatter", mode="lines+markers+text", line=dict(color=colour(i), width=3),
                           marker=dict(size=[0, 12], color=colour(i)), textposition="top center", showlegend=False,
                           **arrow))
    # made in one go: each add_trace / update_* call would check the whole figure again
    return figure(traces, dict(
        xaxis=dict(title=dict(text="sin(p·ω)"), range=[-1.3, 1.3], zeroline=True),
        yaxis=dict(title=dict(text="cos(p·ω)"), range=[-1.3, 1.3], scaleanchor="x", zeroline=True),
        title=dict(text=title), height=height, margin=margins(title, (50 if title else 20) + TITLE_LINE_PX * lines)))
