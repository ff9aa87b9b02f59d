"""Figures of a real ViT reading a picture (pages/family/vit_pretrained.py): the [CLS] query's attention over the
patches, one tile per head, and the attention rollout, each in red over the picture.

Coordinates: x is the pixel column, y the pixel row (row 0 at the top) of the picture as the model sees it
(resized). A grid of g×g patches covers it; patch (r, c) spans rows r·s … (r+1)·s of a tile of side g·s."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.family_vit import OVERLAY
from app.charts.style import esc, margins, to_np

TILE_PX = 112   # at most this many pixels per side of each head's copy of the picture
FADE = 0.55     # the picture is faded towards white under the weights, so that red reads on any colour


def _picture(image, side: int | None = None) -> np.ndarray:
    """(h, w, 3) 0..255 as floats, faded towards white, subsampled to at most `side` pixels per side."""
    img = np.asarray(image, dtype=np.float64)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    step = max(1, int(np.ceil(max(img.shape[:2]) / side))) if side else 1
    img = img[::step, ::step, :3]
    grey = img.mean(axis=2, keepdims=True)
    return 255 - (255 - (0.5 * img + 0.5 * grey)) * (1 - FADE)


def _axes(width: float, height: float) -> dict:
    common = dict(showgrid=False, zeroline=False, showticklabels=False, ticks="", constrain="domain")
    return dict(xaxis=dict(range=[-0.5, width - 0.5], **common),
                yaxis=dict(range=[height - 0.5, -0.5], scaleanchor="x", **common))


def head_attention_tiles(image, maps, cls_self, *, layer: int = 0, head_title: str = "head",
                         cls_label: str = "[CLS]", title: str = "", columns: int = 4, gap: int = 6) -> go.Figure:
    """One tile per head of one layer: the [CLS] query's weight on each patch, red over the picture, each tile on
    its own scale (0 … its largest weight); the caption gives the weight [CLS] keeps for itself.
    maps: (L, H, g, g); cls_self: (L, H); `layer` picks the row of both (0-based)."""
    m, s = to_np(maps)[layer], to_np(cls_self)[layer]
    H, g = m.shape[0], m.shape[1]
    pic = _picture(image, TILE_PX)
    side = pic.shape[0]
    cols = max(1, min(columns, H))
    rows = -(-H // cols)
    step_x, step_y = side + gap, side + gap + 16  # room above each tile for its caption
    mosaic = np.full((rows * step_y, cols * step_x - gap, 3), 255.0)
    traces, notes = [], []
    for h in range(H):
        r, c = divmod(h, cols)
        y0, x0 = r * step_y + 16, c * step_x
        mosaic[y0:y0 + side, x0:x0 + pic.shape[1]] = pic
        top = max(float(m[h].max()), 1e-12)
        cell = side / g
        traces.append(go.Heatmap(z=m[h] / top, customdata=m[h], x0=x0 + cell / 2 - 0.5, dx=cell,
                                 y0=y0 + cell / 2 - 0.5, dy=cell, colorscale=OVERLAY, zmin=0, zmax=1, showscale=False,
                                 hovertemplate=f"{esc(head_title)} {h + 1}: %{{customdata:.3f}}<extra></extra>"))
        notes.append(dict(x=x0 + side / 2, y=y0 - 2, yanchor="bottom", showarrow=False, font=dict(size=11),
                          text=f"{esc(head_title)} {h + 1} · {esc(cls_label)}→{esc(cls_label)} {s[h]:.2f}"))
    width = min(900, cols * 210)
    height = int(width * mosaic.shape[0] / mosaic.shape[1]) + (60 if title else 20)
    return go.Figure([go.Image(z=mosaic.round().astype(np.uint8), hoverinfo="skip"), *traces],  # bytes: small to send
                     layout=dict(annotations=notes, **_axes(mosaic.shape[1], mosaic.shape[0]), title=esc(title),
                                 height=height, margin=margins(title), plot_bgcolor="white"))


def rollout_range(rollout_grid) -> tuple[float, float]:
    """The rollout's colour range: from 0 to its largest share, and at least to twice the even share 2/P, so that
    an even map (a model with random weights) is drawn as even, half-strength everywhere, and never stretched into
    a glow over the small differences of a near-even one."""
    r = to_np(rollout_grid)
    return 0.0, max(float(r.max()), 2.0 / max(1, r.size))


def image_rollout(image, rollout_grid, *, title: str = "", scale_title: str = "") -> go.Figure:
    """The attention rollout from [CLS] (g, g) in red over the picture, with its colour bar on rollout_range."""
    r = to_np(rollout_grid)
    pic = _picture(image)
    g, side = r.shape[0], pic.shape[0]
    low, high = rollout_range(r)
    cell = side / g
    overlay = go.Heatmap(z=r, x0=cell / 2 - 0.5, dx=cell, y0=cell / 2 - 0.5, dy=cell, colorscale=OVERLAY, zmin=low,
                         zmax=high, hovertemplate="%{z:.4f}<extra></extra>",
                         colorbar=dict(title=dict(text=esc(scale_title)), tickformat=".3f"))
    return go.Figure([go.Image(z=pic.round().astype(np.uint8), hoverinfo="skip"), overlay],
                     layout=dict(**_axes(pic.shape[1], side), title=esc(title), height=420, margin=margins(title)))
