"""Figures of the BERT-style member (app/family/mlm.py): the top guesses at every masked position, one
small bar panel each, in one figure; the piece that was hidden (when the learner hid a known token) in
another colour."""
from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.charts.style import colour, esc, labels as escaped_labels, margins

HIDDEN_COLOUR = "#2ca02c"


def mask_predictions(panels, *, x_title: str = "", per_row: int = 3, height_per_row: int = 230) -> go.Figure:
    """panels: [(title, pieces, probabilities, hidden piece or None)], best guess first. Bars on 0…1."""
    n = max(1, len(panels))
    cols = max(1, min(per_row, n))
    rows = math.ceil(n / cols)
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[esc(p[0]) for p in panels] or None,
                        horizontal_spacing=0.18 / cols + 0.06, vertical_spacing=min(0.25, 0.5 / rows))
    for k, (_, pieces, probs, hidden) in enumerate(panels):
        r, c = k // cols + 1, k % cols + 1
        names = escaped_labels(pieces)
        colours = [HIDDEN_COLOUR if hidden is not None and p == hidden else colour(0) for p in pieces]
        fig.add_trace(go.Bar(x=list(probs), y=names, orientation="h", marker_color=colours,
                             text=[f"{v:.3f}" for v in probs], textposition="auto", showlegend=False,
                             hovertemplate="%{y}: %{x:.4f}<extra></extra>"), row=r, col=c)
        fig.update_yaxes(autorange="reversed", type="category", row=r, col=c)
        fig.update_xaxes(range=[0, 1], title=x_title if r == rows else None, row=r, col=c)
    fig.update_layout(height=max(240, rows * height_per_row + 40), margin=margins("x"))
    return fig
