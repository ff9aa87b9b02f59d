"""Figure builders: arrays in, plotly figures out. Pure functions, no st.* calls."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

ATTN_SCALE = "Blues"  # one colour scale, 0..1, for attention weights everywhere


def _np(x) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def _unique(labels) -> list[str]:
    """Plotly merges equal category labels; make repeated tokens distinct (but readable)."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        lab = str(lab)
        n = seen.get(lab, 0)
        seen[lab] = n + 1
        out.append(lab if n == 0 else f"{lab}\u200b" * 1 + f" ({n + 1})")
    return out


def matrix_heatmap(values, x_labels=None, y_labels=None, *, title="", x_title="", y_title="",
                   zmin=None, zmax=None, colorscale="RdBu", reversescale=True, decimals=2,
                   show_text=True, height=None, highlight=None, zmid=None) -> go.Figure:
    """A labelled heatmap with the numbers written in the cells. `highlight` is an optional
    boolean matrix; marked cells get a red outline (e.g. cells that differ from a printed value)."""
    z = _np(values)
    n_rows, n_cols = z.shape
    xs = _unique(x_labels if x_labels is not None else [str(j) for j in range(n_cols)])
    ys = _unique(y_labels if y_labels is not None else [str(i) for i in range(n_rows)])
    text = None
    if show_text:
        text = [[("−∞" if v == -np.inf else "∞" if v == np.inf else "NaN" if np.isnan(v) else f"{v:.{decimals}f}")
                 for v in row] for row in z]
    zplot = np.where(np.isfinite(z), z, np.nan)
    fig = go.Figure(go.Heatmap(
        z=zplot, x=xs, y=ys, text=text, texttemplate="%{text}" if show_text else None,
        colorscale=colorscale, reversescale=reversescale, zmin=zmin, zmax=zmax, zmid=zmid,
        hovertemplate=f"{y_title} %{{y}} · {x_title} %{{x}}<br>%{{z:.4f}}<extra></extra>",
        xgap=1, ygap=1,
    ))
    if highlight is not None:
        hl = np.asarray(highlight, dtype=bool)
        for i, j in zip(*np.nonzero(hl)):
            fig.add_shape(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
                          line=dict(color="#d62728", width=3), xref="x", yref="y")
    fig.update_yaxes(autorange="reversed", title=y_title, type="category")
    fig.update_xaxes(title=x_title, side="top", type="category")
    fig.update_layout(title=title, margin=dict(l=10, r=10, t=60 if title else 30, b=10),
                      height=height or max(220, 46 * n_rows + 120))
    return fig


def attention_heatmap(weights, query_labels, key_labels, *, title="", query_title="query",
                      key_title="key", show_text=None, height=None) -> go.Figure:
    """Attention weights (Lq, Lk) on the shared 0..1 scale; rows are queries, columns keys."""
    w = _np(weights)
    if show_text is None:
        show_text = max(w.shape) <= 16
    return matrix_heatmap(w, key_labels, query_labels, title=title, x_title=f"{key_title} →",
                          y_title=f"{query_title} ↓", zmin=0.0, zmax=1.0, colorscale=ATTN_SCALE,
                          reversescale=False, show_text=show_text, height=height)


def head_grid(weights, *, layer_title="layer", head_title="head", gap: int = 1, height=None) -> go.Figure:
    """All layers × heads at a glance, tiled into ONE heatmap (much faster than subplots).
    weights: (layers, heads, Lq, Lk)."""
    w = _np(weights)
    n_layers, n_heads, lq, lk = w.shape
    H = n_layers * lq + (n_layers - 1) * gap
    W = n_heads * lk + (n_heads - 1) * gap
    canvas = np.full((H, W), np.nan)
    for l in range(n_layers):
        for h in range(n_heads):
            r, c = l * (lq + gap), h * (lk + gap)
            canvas[r:r + lq, c:c + lk] = w[l, h]
    fig = go.Figure(go.Heatmap(z=canvas, colorscale=ATTN_SCALE, zmin=0, zmax=1, hoverongaps=False,
                               hovertemplate="%{z:.3f}<extra></extra>"))
    fig.update_yaxes(autorange="reversed", showticklabels=True, tickmode="array",
                     tickvals=[l * (lq + gap) + (lq - 1) / 2 for l in range(n_layers)],
                     ticktext=[f"{layer_title} {l + 1}" for l in range(n_layers)], scaleanchor="x")
    fig.update_xaxes(side="top", tickmode="array",
                     tickvals=[h * (lk + gap) + (lk - 1) / 2 for h in range(n_heads)],
                     ticktext=[f"{head_title} {h + 1}" for h in range(n_heads)])
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), height=height or min(900, 120 + 170 * n_layers),
                      plot_bgcolor="white")
    return fig


def matrix_to_csv(values, row_labels=None, col_labels=None) -> str:
    """The numbers behind a figure as CSV text (labels in the first row and column)."""
    z = _np(values)
    rows = row_labels if row_labels is not None else [str(i) for i in range(z.shape[0])]
    cols = col_labels if col_labels is not None else [str(j) for j in range(z.shape[1])]
    esc = lambda s: '"' + str(s).replace('"', '""') + '"'
    lines = ["," + ",".join(esc(c) for c in cols)]
    lines += [esc(r) + "," + ",".join(repr(float(v)) for v in row) for r, row in zip(rows, z)]
    return "\n".join(lines) + "\n"
