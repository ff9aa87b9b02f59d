"""Figures of the BERT-style member (pages/family/mlm.py): the top guesses at every masked position, one
small bar panel each, in one figure; the piece that was hidden (when the learner hid a known token) in
another colour."""
from __future__ import annotations

import math


from app.format import number
from app.charts.style import Figure, colour, esc, figure, labels as escaped_labels, margins

HIDDEN_COLOUR = "#2ca02c"


def mask_predictions(panels, *, x_title: str = "", per_row: int = 3, height_per_row: int = 230) -> Figure:
    """panels: [(title, pieces, probabilities, hidden piece or None)], best guess first. Bars on 0…1.
    The grid of panels is laid out here as plotly's make_subplots lays it out (the same axes, domains and panel
    titles), in one draft figure (style.figure): make_subplots and a trace added per panel took several times as
    long."""
    n = max(1, len(panels))
    cols = max(1, min(per_row, n))
    rows = math.ceil(n / cols)
    h_gap, v_gap = 0.18 / cols + 0.06, min(0.25, 0.5 / rows)
    width, height = (1 - h_gap * (cols - 1)) / cols, (1 - v_gap * (rows - 1)) / rows
    layout: dict = dict(height=max(240, rows * height_per_row + 40), margin=margins("x"))
    cells = []
    for k in range(rows * cols):  # every cell of the grid has its axes, as in make_subplots
        r, c = divmod(k, cols)
        x0, y1 = c * (width + h_gap), 1 - r * (height + v_gap)
        suffix = "" if k == 0 else str(k + 1)
        # (rounding can put the last row's edge a hair below 0, which plotly refuses)
        layout[f"xaxis{suffix}"] = dict(anchor=f"y{suffix}", domain=[max(0.0, x0), min(1.0, x0 + width)])
        layout[f"yaxis{suffix}"] = dict(anchor=f"x{suffix}", domain=[max(0.0, y1 - height), min(1.0, y1)])
        cells.append((r, suffix, x0 + width / 2, y1))
    data, titles = [], []
    for (title, pieces, probs, hidden), (r, suffix, x_mid, top) in zip(panels, cells):
        colours = [HIDDEN_COLOUR if hidden is not None and p == hidden else colour(0) for p in pieces]
        data.append(dict(type="bar", x=list(probs), y=escaped_labels(pieces), orientation="h",
                         marker=dict(color=colours), text=[number(v, ".3f") for v in probs], textposition="auto",
                         showlegend=False, hovertemplate="%{y}: %{x:.4f}<extra></extra>",
                         xaxis=f"x{suffix}", yaxis=f"y{suffix}"))
        layout[f"yaxis{suffix}"].update(autorange="reversed", type="category")
        layout[f"xaxis{suffix}"].update(range=[0, 1], title=dict(text=esc(x_title)) if r == rows - 1 and x_title else None)
        titles.append(dict(text=esc(title), x=x_mid, y=top, xref="paper", yref="paper", xanchor="center",
                           yanchor="bottom", showarrow=False, font=dict(size=16)))
    if titles:
        layout["annotations"] = titles
    return figure(data, layout)
