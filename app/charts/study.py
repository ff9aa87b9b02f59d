"""Table 3 by factor: the paper's dev perplexity beside ours (median over seeds, bars = min…max, a dot per seed)."""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.format import number
from app.charts.style import colour, esc, labels as escaped_labels, margins


def factor_figure(names, paper, ours_mean, ours_low, ours_high, seeds, *, title: str, paper_title: str,
                  ours_title: str, y_title: str, seeds_label: str, per_seed=None, seed_title: str = "") -> go.Figure:
    """Two panels over the same rows: the paper's numbers and ours with the seeds' range as error bars and,
    given `per_seed` (one list per row), every seed as a small grey dot. `names` are row labels (escaped
    here); a row we have no number for is left out of our panel."""
    x = escaped_labels(names)
    title, paper_title, ours_title, y_title = esc(title), esc(paper_title), esc(ours_title), esc(y_title)
    seeds_label, seed_title = esc(seeds_label), esc(seed_title)
    fig = make_subplots(rows=1, cols=2, subplot_titles=(paper_title, ours_title), horizontal_spacing=0.12)
    fig.add_trace(go.Scatter(x=x, y=list(paper), mode="markers", marker=dict(size=11, color=colour(0)),
                             name=paper_title,
                             text=[number(v, ".2f") if v is not None else "" for v in paper],
                             hovertemplate="%{x}: %{y:.2f}<extra></extra>"), row=1, col=1)
    keep = [i for i, m in enumerate(ours_mean) if m is not None]
    fig.add_trace(go.Scatter(
        x=[x[i] for i in keep], y=[ours_mean[i] for i in keep], mode="markers",
        marker=dict(size=11, color=colour(1)), name=ours_title,
        error_y=dict(type="data", symmetric=False, array=[ours_high[i] - ours_mean[i] for i in keep],
                     arrayminus=[ours_mean[i] - ours_low[i] for i in keep], thickness=1.5, width=6),
        customdata=[seeds[i] for i in keep],
        hovertemplate="%{x}: %{y:.3f} (" + seeds_label + " %{customdata})<extra></extra>"), row=1, col=2)
    if per_seed is not None:
        xs = [x[i] for i, vals in enumerate(per_seed) for _ in vals]
        ys = [v for vals in per_seed for v in vals]
        seed_no = [j for vals in per_seed for j in range(len(vals))]
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="markers", name=seed_title, customdata=seed_no,
                                 marker=dict(size=6, color="rgba(90,90,90,0.55)", symbol="circle-open"),
                                 hovertemplate="%{x}: %{y:.3f} (" + seed_title + " %{customdata})<extra></extra>"),
                      row=1, col=2)
    fig.update_xaxes(type="category", tickangle=-30)
    fig.update_yaxes(title=y_title, row=1, col=1)
    fig.update_yaxes(title=y_title, row=1, col=2)
    fig.update_layout(title=title, height=380, showlegend=False, margin=margins(title))
    return fig
