"""More generic figure builders (histograms, bars, lines). Pure functions, no st.* calls."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def histogram_overlay(series: dict[str, np.ndarray], *, title="", x_title="", y_title="", nbins=80,
                      height=360) -> go.Figure:
    """Overlaid, semi-transparent histograms of several samples, normalised to probability density."""
    fig = go.Figure()
    for i, (name, values) in enumerate(series.items()):
        fig.add_trace(go.Histogram(x=np.asarray(values, float), name=name, nbinsx=nbins, opacity=0.6,
                                   histnorm="probability density", marker_color=PALETTE[i % len(PALETTE)]))
    fig.update_layout(barmode="overlay", title=title, height=height, xaxis_title=x_title, yaxis_title=y_title,
                      margin=dict(l=10, r=10, t=50 if title else 20, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1.0))
    return fig


def bar_chart(labels, values, *, title="", y_title="", y_range=None, text_decimals=3, color=None,
              height=300) -> go.Figure:
    """One bar per label with its value written on it."""
    vals = np.asarray(values, float)
    fig = go.Figure(go.Bar(x=[str(x) for x in labels], y=vals, text=[f"{v:.{text_decimals}f}" for v in vals],
                           textposition="auto", marker_color=color or PALETTE[0]))
    fig.update_xaxes(type="category")
    fig.update_layout(title=title, yaxis_title=y_title, height=height, yaxis_range=y_range,
                      margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    return fig


def line_chart(x, series: dict[str, np.ndarray], *, title="", x_title="", y_title="", log_x=False, log_y=False,
               vline=None, vline_label="", height=360) -> go.Figure:
    """Several lines over a shared x axis; `vline` draws a dashed marker at that x."""
    fig = go.Figure()
    for i, (name, ys) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=np.asarray(x, float), y=np.asarray(ys, float), mode="lines", name=name,
                                 line=dict(color=PALETTE[i % len(PALETTE)], width=2)))
    if vline is not None:  # a trace, not a shape: shapes and annotations misplace x on log axes
        ys = np.concatenate([np.asarray(v, float).ravel() for v in series.values()])
        ys = ys[np.isfinite(ys) & ((ys > 0) if log_y else True)]
        lo, hi = (ys.min(), ys.max()) if ys.size else (0.0, 1.0)
        fig.add_trace(go.Scatter(x=[vline, vline], y=[lo, hi], mode="lines", name=vline_label,
                                 line=dict(color="#555", dash="dash", width=1.5)))
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear", exponentformat="power" if log_y else "B")
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=60 if title else 30, b=10),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0))
    return fig


def series_to_csv(columns: dict[str, np.ndarray]) -> str:
    """Equal-length columns as CSV text with a header row."""
    names = list(columns)
    cols = [np.asarray(columns[n]).ravel() for n in names]
    esc = lambda s: '"' + str(s).replace('"', '""') + '"'
    lines = [",".join(esc(n) for n in names)]
    for row in zip(*cols):
        lines.append(",".join(repr(float(v)) if isinstance(v, (int, float, np.number)) else esc(v) for v in row))
    return "\n".join(lines) + "\n"


def head_tiles(weights, query_labels, key_labels, *, head_title="head", query_title="query", key_title="key",
               per_row=4, show_text=None, height=None) -> go.Figure:
    """Several heads' attention maps (H, Lq, Lk) tiled side by side in ONE heatmap on the shared 0..1
    scale, with token labels and a title over each head (one heatmap builds far faster than subplots).
    Rows are queries, columns keys, in every tile."""
    w = np.asarray(weights, float)
    n_heads, lq, lk = w.shape
    per_row = max(1, min(per_row, n_heads))
    n_block_rows = -(-n_heads // per_row)
    gap_x, gap_y = 1, 1
    rows = n_block_rows * lq + (n_block_rows - 1) * gap_y
    cols = per_row * lk + (per_row - 1) * gap_x
    canvas = np.full((rows, cols), np.nan)
    text = [["" for _ in range(cols)] for _ in range(rows)]
    hover = [["" for _ in range(cols)] for _ in range(rows)]
    if show_text is None:
        show_text = max(lq, lk) <= 8
    annotations = []
    for h in range(n_heads):
        br, bc = divmod(h, per_row)
        y0, x0 = br * (lq + gap_y), bc * (lk + gap_x)
        canvas[y0:y0 + lq, x0:x0 + lk] = w[h]
        for i in range(lq):
            for j in range(lk):
                v = w[h, i, j]
                text[y0 + i][x0 + j] = f"{v:.2f}" if show_text else ""
                hover[y0 + i][x0 + j] = (f"{head_title} {h + 1}<br>{query_title}: {query_labels[i]}<br>"
                                         f"{key_title}: {key_labels[j]}<br>{v:.4f}")
        annotations.append(dict(x=x0 + (lk - 1) / 2, y=y0 - 0.5, yshift=10, text=f"<b>{head_title} {h + 1}</b>",
                                showarrow=False, xref="x", yref="y", yanchor="bottom"))
    fig = go.Figure(go.Heatmap(z=canvas, text=text if show_text else None,
                               texttemplate="%{text}" if show_text else None,
                               hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", hoverongaps=False,
                               colorscale="Blues", zmin=0, zmax=1, xgap=1, ygap=1,
                               colorbar=dict(title=dict(text=""), thickness=14)))
    x_ticks = [bc * (lk + gap_x) + j for bc in range(per_row) for j in range(lk)]
    y_ticks = [br * (lq + gap_y) + i for br in range(n_block_rows) for i in range(lq)]
    fig.update_xaxes(tickmode="array", tickvals=x_ticks, ticktext=[str(k) for _ in range(per_row) for k in key_labels],
                     title=f"{key_title} →", showgrid=False, zeroline=False, range=[-0.5, cols - 0.5])
    fig.update_yaxes(tickmode="array", tickvals=y_ticks,
                     ticktext=[str(q) for _ in range(n_block_rows) for q in query_labels], autorange="reversed",
                     title=f"{query_title} ↓", showgrid=False, zeroline=False)
    fig.update_layout(annotations=annotations, plot_bgcolor="rgba(0,0,0,0)",
                      margin=dict(l=10, r=10, t=40, b=10),
                      height=height or min(1000, 110 + n_block_rows * (lq * 34 + 40)))
    return fig
