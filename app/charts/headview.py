"""The BertViz-style head view of one layer: a line from each query (left) to each key (right)."""
from __future__ import annotations

import numpy as np

from app.charts.style import Figure, colour, esc, figure, margins, to_np


def head_view(weights, q_labels: list[str], k_labels: list[str], heads: list[int], *, query_title="query",
              key_title="key", head_title="head", levels: int = 6) -> Figure:
    """Line opacity and width follow the attention weight, one colour per head. weights: (H, Lq, Lk).
    Lines are grouped by head and by weight level, so the figure has few traces."""
    w = to_np(weights)
    query_title, key_title, head_title = esc(query_title), esc(key_title), esc(head_title)
    H, Lq, Lk = w.shape
    yq = np.linspace(0, 1, Lq) if Lq > 1 else np.array([0.5])
    yk = np.linspace(0, 1, Lk) if Lk > 1 else np.array([0.5])
    edges = np.linspace(0.0, 1.0, levels + 1)
    # Traces and layout as plain dicts, validated once when the figure is built (a figure grown trace by
    # trace and updated afterwards pays plotly's checks again each time: 2-3x the build time).
    traces = []
    for h in heads:
        c = colour(h)
        for lvl in range(levels):
            lo, hi = edges[lvl], edges[lvl + 1]
            sel = np.argwhere((w[h] > max(lo, 0.02)) & (w[h] <= hi + 1e-9))
            if not len(sel):
                continue
            # One segment per (query, key) pair: query side, key side, a gap (NaN) before the next one. Float
            # arrays go out as binary (an object array with None went through plotly's JSON value by value,
            # most of a head view's build); plotly.js breaks a line at NaN as it does at null.
            xs = np.tile(np.array([0.0, 1.0, np.nan]), len(sel))
            ys = np.full(3 * len(sel), np.nan)
            ys[0::3], ys[1::3] = yq[sel[:, 0]], yk[sel[:, 1]]
            traces.append(dict(type="scatter", x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                               line=dict(color=c, width=1 + 4 * hi),
                               opacity=min(1.0, 0.15 + hi * 0.85 / len(heads) ** 0.5)))
        traces.append(dict(type="scatter", x=[None], y=[None], mode="lines", line=dict(color=c, width=4),
                           name=f"{head_title} {h + 1}"))
    traces.append(dict(type="scatter", x=[-0.02] * Lq, y=yq, mode="text", text=[esc(q) for q in q_labels],
                       textposition="middle left", hoverinfo="skip", showlegend=False))
    traces.append(dict(type="scatter", x=[1.02] * Lk, y=yk, mode="text", text=[esc(k) for k in k_labels],
                       textposition="middle right", hoverinfo="skip", showlegend=False))
    layout = dict(xaxis=dict(visible=False, range=[-0.45, 1.45]), yaxis=dict(visible=False, autorange="reversed"),
                  height=max(340, 28 * max(Lq, Lk) + 110), margin=margins(top=40) | dict(b=40),
                  plot_bgcolor="white",
                  legend=dict(orientation="h", y=-0.02, yanchor="top", x=0.5, xanchor="center"),
                  annotations=[dict(x=0, y=1.0, xref="x", yref="paper", text=f"<b>{query_title}</b>",
                                    showarrow=False, yanchor="bottom"),
                               dict(x=1, y=1.0, xref="x", yref="paper", text=f"<b>{key_title}</b>",
                                    showarrow=False, yanchor="bottom")])
    return figure(traces, layout)
