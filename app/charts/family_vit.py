"""Figures of the ViT section (pages/family/vit.py): the patch grid as numbered tokens,
class probabilities, [CLS] attention and its rollout laid over the digit, and position-embedding similarity.

Coordinates: x is the pixel column 0..7, y the pixel row 0..7 (row 0 at the top). A patch grid of g×g
patches of `cell` pixels each is drawn with its cells centred at cell·(k + ½) − ½."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.charts.curves import bar_chart
from app.charts.heatmaps import matrix_heatmap
from app.format import number
from app.charts.style import Figure, OUTLINE, amend, colour, esc, lift_title, margins, to_np

INK = "Greys"             # the digit: 0 white … 16 black
MAX_VALUE = 16
OVERLAY = [[0.0, "rgba(214,39,40,0)"], [1.0, "rgba(214,39,40,0.8)"]]  # transparent -> red, over the digit


def _square_axes(size: int, ticks: bool = False) -> dict:
    """Both axes over the pixels (row 0 at the top), square cells whatever width the page gives: the layout's
    xaxis and yaxis, given when the figure is built (each update_xaxes / update_layout afterwards checks the whole
    figure again, and a member switch to the ViT spent most of its build in them)."""
    common = dict(showgrid=False, zeroline=False, showticklabels=ticks, ticks="", constrain="domain")
    return dict(xaxis=dict(range=[-0.5, size - 0.5], **common),
                yaxis=dict(range=[size - 0.5, -0.5], scaleanchor="x", **common))


def _digit_trace(image, *, showscale: bool = False, hover: str = "") -> go.Heatmap:
    z = to_np(image)
    return go.Heatmap(z=z, colorscale=INK, zmin=0, zmax=MAX_VALUE, showscale=showscale,
                      hovertemplate=hover or "(%{y}, %{x}): %{z}<extra></extra>")


def _grid_trace(values, cell: float, *, zmin: float = 0.0, zmax: float | None = None, colorscale=OVERLAY,
                hover: str = "", showscale: bool = False, customdata=None) -> go.Heatmap:
    z = to_np(values)
    return go.Heatmap(z=z, x0=cell / 2 - 0.5, dx=cell, y0=cell / 2 - 0.5, dy=cell, colorscale=colorscale,
                      zmin=zmin, zmax=zmax if zmax is not None else max(float(np.nanmax(z)), zmin + 1e-9),
                      showscale=showscale, customdata=customdata,
                      hovertemplate=hover or "%{z:.3f}<extra></extra>")


def _patch_lines(grid: int, cell: float, size: int) -> list[dict]:
    """The patch borders as layout shapes (one list: adding shapes one by one is slow in plotly)."""
    out = []
    for k in range(1, grid):
        v = k * cell - 0.5
        out.append(dict(type="line", x0=v, x1=v, y0=-0.5, y1=size - 0.5, line=dict(color=colour(0), width=1)))
        out.append(dict(type="line", y0=v, y1=v, x0=-0.5, x1=size - 0.5, line=dict(color=colour(0), width=1)))
    return out


def patch_tokens(image, grid: int, cell: float, *, title: str = "", cls_label: str = "[CLS]") -> go.Figure:
    """The digit with the patch grid drawn over it and each patch's token number (1…P, [CLS] is 0)."""
    img = to_np(image)
    size = img.shape[0]
    notes = [dict(x=c * cell + cell / 2 - 0.5, y=r * cell + cell / 2 - 0.5, text=f"<b>{k + 1}</b>", showarrow=False,
                  font=dict(color=colour(0), size=15), bgcolor="rgba(255,255,255,0.75)")
             for k in range(grid * grid) for r, c in [divmod(k, grid)]]
    notes.append(dict(x=0.5, y=-0.02, xref="paper", yref="paper", yanchor="top", showarrow=False,
                      text=f"0 = {esc(cls_label)}", font=dict(size=12)))
    return go.Figure(_digit_trace(img), layout=dict(shapes=_patch_lines(grid, cell, size), annotations=notes,
                                                     **_square_axes(size), title=esc(title), height=370,
                                                     margin=dict(margins(title), b=30)))


def class_probabilities(probs, *, title: str = "", x_title: str = "", y_title: str = "", predicted: int | None = None,
                        true_label: int | None = None) -> Figure:
    """Bars for the 10 digits; the predicted one in red, the true one (a test digit) outlined."""
    p = to_np(probs).ravel()
    colors = [OUTLINE if i == predicted else colour(0) for i in range(len(p))]
    fig = bar_chart([str(i) for i in range(len(p))], p, title=title, x_title=x_title, y_title=y_title,
                    y_range=[0, 1.12], decimals=2, colors=colors, height=300, text_outside=True)
    if true_label is not None and 0 <= true_label < len(p):
        fig = amend(fig, dict(shapes=[dict(type="rect", x0=true_label - 0.45, x1=true_label + 0.45, y0=0, y1=1.08,
                                           line=dict(color=colour(2), width=2, dash="dot"), xref="x", yref="y")]))
    return fig


def _upsampled(values: np.ndarray, to: int) -> np.ndarray:
    """A (n, n) map repeated to (to, to): every value becomes a to/n × to/n block."""
    n = values.shape[0]
    return np.kron(values, np.ones((to // n, to // n)))


def cls_attention_tiles(image, maps, cls_self, *, layer_title: str = "layer", head_title: str = "head",
                        cls_label: str = "[CLS]", title: str = "", first_layer: int = 1, gap: int = 2) -> go.Figure:
    """One small tile per layer (rows) × head (columns): the [CLS] query's attention to each patch, red over
    the digit, each tile on its own scale (0 … its largest weight); the tile's caption gives the weight
    [CLS] keeps for itself. maps: (L, H, g, g); cls_self: (L, H); the first row is layer `first_layer`.
    All tiles are two heatmaps in one plot (fast): the digits, and the weights over them."""
    img, m, s = to_np(image), to_np(maps), to_np(cls_self)
    L, H, g = m.shape[0], m.shape[1], m.shape[2]
    R = int(np.lcm(img.shape[0], g))  # a resolution where pixels and patches both are whole blocks
    step = R + gap
    digits = np.full((L * step - gap, H * step - gap), np.nan)
    shade, weight = digits.copy(), digits.copy()
    big_img = _upsampled(img, R)
    notes = []
    for l in range(L):
        for h in range(H):
            r0, c0 = l * step, h * step
            digits[r0:r0 + R, c0:c0 + R] = big_img
            top = max(float(m[l, h].max()), 1e-12)
            shade[r0:r0 + R, c0:c0 + R] = _upsampled(m[l, h] / top, R)
            weight[r0:r0 + R, c0:c0 + R] = _upsampled(m[l, h], R)
            notes.append(dict(x=c0 + (R - 1) / 2, y=r0 - 0.6, yanchor="bottom", showarrow=False, font=dict(size=10),
                              text=f"{esc(layer_title)} {l + first_layer} · {esc(head_title)} {h + 1} · "
                                   f"{esc(cls_label)}→{esc(cls_label)} {number(s[l, h], '.2f')}"))
    common = dict(showgrid=False, zeroline=False, showticklabels=False, ticks="", constrain="domain")
    width = min(880, 190 * H + 20)
    return go.Figure([
        go.Heatmap(z=digits, colorscale=INK, zmin=0, zmax=MAX_VALUE, showscale=False, hoverinfo="skip",
                   hoverongaps=False),
        go.Heatmap(z=shade, customdata=weight, colorscale=OVERLAY, zmin=0, zmax=1, showscale=False,
                   hoverongaps=False, hovertemplate="%{customdata:.3f}<extra></extra>"),
    ], layout=dict(
        annotations=notes, xaxis=dict(range=[-0.5, H * step - gap - 0.5], **common),
        yaxis=dict(range=[L * step - gap - 0.5, -2.2], scaleanchor="x", **common), title=esc(title),
        height=int((width - 20) * (L * step + 2) / (H * step)) + (70 if title else 30), margin=margins(title),
        plot_bgcolor="white"))


def rollout_overlay(image, rollout_grid, cell: float, *, title: str = "") -> go.Figure:
    """The attention rollout from [CLS] (g, g), red over the digit, with its colour bar. The colours span the
    smallest to the largest share (rollout is rarely far from even, so 0 … max would hide the digit)."""
    img, r = to_np(image), to_np(rollout_grid)
    size = img.shape[0]
    low = float(r.min()) if r.size > 1 and float(r.max()) > float(r.min()) else 0.0
    return go.Figure([_digit_trace(img), _grid_trace(r, cell, zmin=low, showscale=True)],
                     layout=dict(shapes=_patch_lines(r.shape[0], cell, size), **_square_axes(size), title=esc(title),
                                 height=380, margin=margins(title)))


def position_similarity_map(similarity, *, title: str = "", x_title: str = "", y_title: str = "") -> Figure:
    """(P, P) cosine similarity of the patches' learned position vectors, patches numbered 1…P."""
    S = to_np(similarity)
    names = [str(i + 1) for i in range(S.shape[0])]
    fig = matrix_heatmap(S, names, names, title=title, x_title=x_title, y_title=y_title, zmin=-1.0, zmax=1.0,
                         zmid=0.0, decimals=2, show_text=S.shape[0] <= 16, height=max(380, 26 * S.shape[0] + 140))
    return lift_title(fig) if title else fig


def _patch_texts(z: np.ndarray, grid: int) -> list[list[str]]:
    labels = np.arange(1, grid * grid + 1).reshape(grid, grid)
    return [[f"{labels[i, j]}<br>{number(z[i, j], '.2f')}" for j in range(grid)] for i in range(grid)]


def patch_similarity_variants(similarity, grid: int, titles: list[str]) -> tuple[list, list]:
    """patch_similarity_grid's numbers, cell texts, outline and title for every patch (row p of `similarity`):
    app.fast.choice.follow's traces and layouts, for a patch picked in the browser."""
    S = to_np(similarity).astype(np.float64)
    z = S.reshape(len(S), grid, grid)
    layouts = []
    for p, title in enumerate(titles):
        r, c = divmod(p, grid)
        layouts.append({"shapes[0].x0": c - 0.5, "shapes[0].x1": c + 0.5, "shapes[0].y0": r - 0.5,
                        "shapes[0].y1": r + 0.5, "title.text": esc(title)})
    return [(0, "z", z), (0, "text", [_patch_texts(m, grid) for m in z])], layouts


def patch_similarity_grid(row, grid: int, patch: int, *, title: str = "") -> go.Figure:
    """One patch's similarity to every patch, laid out on the patch grid (the chosen patch outlined)."""
    z = to_np(row).reshape(grid, grid)
    r, c = divmod(patch, grid)
    outline = dict(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5, line=dict(color=colour(2), width=3))
    return go.Figure(go.Heatmap(z=z, colorscale="RdBu", reversescale=True, zmin=-1, zmax=1, zmid=0,
                                text=_patch_texts(z, grid),
                                texttemplate="%{text}", hovertemplate="%{text}<extra></extra>", xgap=1, ygap=1),
                     layout=dict(shapes=[outline], **_square_axes(grid), title=esc(title), height=360,
                                 margin=margins(title)))

