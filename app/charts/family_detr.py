"""Figures for the DETR section of the family page: a picture with its ground-truth and predicted boxes,
one object query's cross-attention laid over the picture, every query's map in one grid, and the decoder's
self-attention among the queries. Pure functions: numbers in, plotly figures out.

Boxes are (cx, cy, w, h) normalised to [0, 1]; on a picture of S pixels, pixel i covers [i - 0.5, i + 0.5]
in plotly's image coordinates, so a box edge at x (normalised) sits at x * S - 0.5."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.heatmaps import attention_heatmap
from app.charts.style import Figure, PALETTE, esc, margins, to_np

GT_COLOUR = "#111111"
HEAT_SCALE = [[0.0, "rgba(255,255,255,0)"], [0.25, "rgba(255,200,0,0.35)"], [0.6, "rgba(255,110,0,0.7)"],
              [1.0, "rgba(200,0,0,0.9)"]]  # transparent where a query does not look, red where it does
GAP = 3  # pixels between tiles of the query grid


def class_colour(c: int) -> str:
    return PALETTE[int(c) % len(PALETTE)]


def faded(image: np.ndarray, keep: float = 0.45) -> np.ndarray:
    """The picture in pale grey, so an attention overlay reads clearly on top of it."""
    img = np.asarray(image, dtype=float)
    grey = img.mean(-1, keepdims=True)
    return np.clip(255 - (255 - grey) * keep, 0, 255).repeat(3, -1).astype(np.uint8)


def _box_xy(box, size: int, dx: float = 0.0, dy: float = 0.0) -> tuple[list, list]:
    cx, cy, w, h = (float(v) for v in box)
    x0, x1 = (cx - w / 2) * size - 0.5 + dx, (cx + w / 2) * size - 0.5 + dx
    y0, y1 = (cy - h / 2) * size - 0.5 + dy, (cy + h / 2) * size - 0.5 + dy
    return [x0, x1, x1, x0, x0], [y0, y0, y1, y1, y0]


def _image_axes(width: float, height: float) -> dict:
    """The layout's axes over the picture's pixels (row 0 at the top), given when the figure is built: each
    add_trace / update_* call afterwards checks the whole figure again."""
    return dict(xaxis=dict(visible=False, range=[-0.5, width - 0.5], constrain="domain"),
                yaxis=dict(visible=False, range=[height - 0.5, -0.5], scaleanchor="x", constrain="domain"))


def scene_figure(image, gt_boxes, gt_labels, pred_boxes, pred_labels, pred_classes, *, title: str = "",
                 gt_name: str = "ground truth", pred_name: str = "prediction", height: int = 460) -> go.Figure:
    """The picture with ground-truth boxes (black, dashed) and predicted boxes (a colour per class),
    each labelled. Labels are escaped."""
    img = np.asarray(image)
    size = img.shape[1]
    traces, notes = [go.Image(z=img, hoverinfo="skip")], []
    for i, (box, label) in enumerate(zip(to_np(gt_boxes).reshape(-1, 4), gt_labels)):
        xs, ys = _box_xy(box, size)
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=GT_COLOUR, width=2, dash="dash"),
                                 name=esc(gt_name), legendgroup="gt", showlegend=i == 0,
                                 hovertemplate=esc(label) + "<extra></extra>"))
    for i, (box, label, c) in enumerate(zip(to_np(pred_boxes).reshape(-1, 4), pred_labels, pred_classes)):
        xs, ys = _box_xy(box, size)
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=class_colour(c), width=3),
                                 name=esc(pred_name), legendgroup="pred", showlegend=i == 0,
                                 hovertemplate=esc(label) + "<extra></extra>"))
        notes.append(dict(x=xs[0], y=ys[0], text=esc(label), showarrow=False, xanchor="left", yanchor="bottom",
                          font=dict(size=11, color="white"), bgcolor=class_colour(c), opacity=0.9))
    return go.Figure(traces, layout=dict(
        annotations=notes, **_image_axes(size, size), title=esc(title) if title else None, height=height,
        margin=margins(title), legend=dict(orientation="h", yanchor="top", y=-0.02, x=0), plot_bgcolor="white"))


def _heat_canvas(maps: np.ndarray, size: int, per_row: int) -> tuple[np.ndarray, int, int]:
    """(n, g, g) maps upsampled to picture pixels and tiled with NaN gaps."""
    n, g, _ = maps.shape
    scale = size // g
    rows = -(-n // per_row)
    cols = min(per_row, n)
    canvas = np.full((rows * size + (rows - 1) * GAP, cols * size + (cols - 1) * GAP), np.nan)
    for k in range(n):
        r, c = divmod(k, per_row)
        y, x = r * (size + GAP), c * (size + GAP)
        canvas[y:y + size, x:x + size] = np.kron(maps[k], np.ones((scale, scale)))
    return canvas, rows, cols


def attention_overlay(image, weights, *, box=None, box_colour: str = PALETTE[0], title: str = "",
                      value_title: str = "", height: int = 440) -> go.Figure:
    """One query's cross-attention over the image-token grid (g, g), drawn over the faded picture on a
    scale from 0 to its largest weight; the query's predicted box (optional) outlined."""
    img = np.asarray(image)
    size = img.shape[1]
    w = to_np(weights)
    canvas, _, _ = _heat_canvas(w[None], size, 1)
    hover = np.kron(w, np.ones((size // w.shape[0], size // w.shape[1])))
    traces = [go.Image(z=faded(img), hoverinfo="skip"),
              go.Heatmap(z=canvas, customdata=hover, colorscale=HEAT_SCALE, zmin=0,
                         zmax=max(float(np.nanmax(w)), 1e-9), hovertemplate="%{customdata:.4f}<extra></extra>",
                         colorbar=dict(title=dict(text=esc(value_title)), thickness=12))]
    if box is not None:
        xs, ys = _box_xy(box, size)
        traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=box_colour, width=3), hoverinfo="skip",
                                 showlegend=False))
    return go.Figure(traces, layout=dict(**_image_axes(size, size), title=esc(title) if title else None,
                                         height=height, margin=margins(title), plot_bgcolor="white"))


def query_grid(image, maps, titles, *, boxes=None, colours=None, per_row: int = 4, value_title: str = "",
               height: int | None = None) -> go.Figure:
    """Every object query's cross-attention (n, g, g) over the faded picture, tiled in one figure on a
    shared 0…max scale, each tile titled (escaped) and, when given, with the query's box outlined."""
    img = np.asarray(image)
    size = img.shape[1]
    m = to_np(maps)
    n = m.shape[0]
    heat, rows, cols = _heat_canvas(m, size, per_row)
    pale = faded(img)
    photo = np.full(heat.shape + (3,), 255, np.uint8)
    for k in range(n):
        r, c = divmod(k, per_row)
        y, x = r * (size + GAP), c * (size + GAP)
        photo[y:y + size, x:x + size] = pale
    traces = [go.Image(z=photo, hoverinfo="skip"),
              go.Heatmap(z=heat, colorscale=HEAT_SCALE, zmin=0, zmax=max(float(np.nanmax(m)), 1e-9),
                         hoverongaps=False, hovertemplate="%{z:.4f}<extra></extra>",
                         colorbar=dict(title=dict(text=esc(value_title)), thickness=12))]
    annotations = []
    for k in range(n):
        r, c = divmod(k, per_row)
        dy, dx = r * (size + GAP), c * (size + GAP)
        colour = colours[k] if colours is not None else GT_COLOUR
        if boxes is not None and boxes[k] is not None:
            xs, ys = _box_xy(boxes[k], size, dx, dy)
            traces.append(go.Scatter(x=xs, y=ys, mode="lines", line=dict(color=colour, width=2), hoverinfo="skip",
                                     showlegend=False))
        annotations.append(dict(x=dx + (size - 1) / 2, y=dy - 0.5, text=esc(titles[k]), showarrow=False,
                                yanchor="bottom", xref="x", yref="y", font=dict(size=11, color=colour)))
    H, W = heat.shape
    return go.Figure(traces, layout=dict(annotations=annotations, **_image_axes(W, H), height=height or 60 + rows * 230,
                                         margin=margins(top=40), plot_bgcolor="white"))


def query_self_attention(weights, labels, *, title: str = "", query_title: str = "query",
                         key_title: str = "key") -> Figure:
    """The decoder's self-attention among the object queries (N, N): rows attend to columns."""
    return attention_heatmap(weights, labels, labels, title=title, query_title=query_title, key_title=key_title,
                             show_text=True)
