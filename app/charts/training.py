"""Curves of training runs, read from their metrics records (metrics.jsonl)."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from app.charts.style import colour, esc, legend_below, margins


FEW_STEPS = 6  # up to this many logged steps, the step axis is ticked at exactly those steps


def series(records: list[dict], kind: str, key: str) -> tuple[list[int], list[float]]:
    """(steps, values) of one metric of one record kind ("train" or "eval"), finite values only."""
    xs, ys = [], []
    for r in records:
        v = r.get(key)
        if r.get("kind") == kind and isinstance(v, (int, float)) and math.isfinite(v):
            xs.append(r["step"])
            ys.append(float(v))
    return xs, ys


def _layout(fig: go.Figure, title: str, x_title: str, y_title: str, height: int = 320) -> go.Figure:
    title, x_title, y_title = esc(title), esc(x_title), esc(y_title)
    fig.update_layout(title=title, height=height, margin=margins(title, 50), legend=legend_below(),
                      hovermode="x unified")
    fig.update_layout(xaxis_title=x_title, yaxis_title=y_title)  # (update_yaxes would retitle yaxis2 too)
    steps = sorted({x for tr in fig.data if tr.x is not None for x in tr.x})
    if 0 < len(steps) <= FEW_STEPS:  # a run's first records: a tick at each step, not Plotly's 9.5 and 10.5
        fig.update_xaxes(tickmode="array", tickvals=steps, ticktext=[f"{s:,}" for s in steps])
    return fig


def loss_figure(records: list[dict], *, title: str, train_name: str, val_name: str, x_title: str,
                y_title: str) -> go.Figure:
    """Training loss (label-smoothed, mean over the logging window) and validation loss."""
    fig = go.Figure()
    x, y = series(records, "train", "loss")
    fig.add_scatter(x=x, y=y, mode="lines", name=esc(train_name), line=dict(color=colour(0)))
    x, y = series(records, "eval", "val_loss")
    fig.add_scatter(x=x, y=y, mode="lines+markers", name=esc(val_name), line=dict(color=colour(1)))
    return _layout(fig, title, x_title, y_title)


def accuracy_figure(records: list[dict], *, title: str, token_name: str, exact_name: str, x_title: str,
                    y_title: str) -> go.Figure:
    fig = go.Figure()
    for i, (key, name) in enumerate((("val_token_acc", token_name), ("val_exact", exact_name))):
        x, y = series(records, "eval", key)
        if x:
            fig.add_scatter(x=x, y=y, mode="lines+markers", name=esc(name), line=dict(color=colour(2 + i)))
    fig.update_yaxes(range=[0, 1.02])
    return _layout(fig, title, x_title, y_title)


def lr_figure(records: list[dict], *, title: str, lr_name: str, tps_name: str, x_title: str) -> go.Figure:
    """Learning rate (the warm-up schedule) and throughput on a second axis."""
    fig = go.Figure()
    x, y = series(records, "train", "lr")
    fig.add_scatter(x=x, y=y, mode="lines", name=esc(lr_name), line=dict(color=colour(4)))
    x, y = series(records, "train", "tokens_per_second")
    fig.add_scatter(x=x, y=y, mode="lines", name=esc(tps_name), line=dict(color=colour(5), dash="dot"), yaxis="y2")
    fig.update_layout(yaxis=dict(rangemode="tozero"),
                      yaxis2=dict(title=esc(tps_name), overlaying="y", side="right", showgrid=False, rangemode="tozero"))
    return _layout(fig, title, x_title, lr_name)


def compare_figure(runs: dict[str, list[dict]], kind: str, key: str, *, title: str, x_title: str,
                   y_title: str) -> go.Figure:
    """One curve per run, for the same metric."""
    fig = go.Figure()
    for i, (name, records) in enumerate(runs.items()):
        x, y = series(records, kind, key)
        fig.add_scatter(x=x, y=y, mode="lines+markers" if kind == "eval" else "lines", name=esc(name),
                        line=dict(color=colour(i)))
    return _layout(fig, title, x_title, y_title, height=380)
