"""Heatmaps: labelled matrices, attention maps on the shared 0…1 scale, every layer × head at a
glance, several heads tiled, large numeric matrices, and the stages of the attention computation.
Rows are queries and columns keys in every attention figure."""
from __future__ import annotations

import html
import math

import numpy as np

from app.charts.style import (MODEBAR_ROOM, TITLE_LINE_PX, Figure, wrapped, ATTN_SCALE, DIVERGING, OUTLINE, esc, figure, labels, lift_title, margins, to_np,
                              value_scale)
from app.charts.text_width import text_px
from app.format import compact, number

TEXT_LIMIT = 16  # heatmaps bigger than this hide the numbers in their cells
# Token labels stay readable however many there are (up to the pages' 24-token sentences, and beyond): every
# label drawn (an array of ticks: Plotly skips none), never smaller than TICK_MIN_PX, and on an axis of more than
# DENSE tokens the key labels turned upright, labels longer than SHORT characters cut with "…" (the hover keeps
# the whole token) and each row given ROW_PX of height.
TICK_MIN_PX = 10
DENSE = 12
SHORT = 8
ROW_PX = 18
PLOT_PX = 320  # the narrowest plot a map is drawn in (one of two columns on a laptop's window)
COL_PX = 16    # a dense map's least column width: its upright label a line apart (the chart element widens a
               # figure to its layout's minreducedwidth and lets its box scroll sideways)


def cell_text(z: np.ndarray, decimals: int = 2) -> list[list[str]]:
    """Numbers written in cells: fixed decimals for ordinary sizes, compact for huge values, ±∞, NaN,
    and a plain 0 for exact zeros (e.g. masked attention weights)."""
    def one(v):
        if v == 0:
            return "0"
        if np.isfinite(v) and abs(v) < 1e4:
            return number(v, f".{decimals}f")
        return compact(v)
    return [[one(v) for v in row] for row in z]


def short_label(label: str, limit: int = SHORT) -> str:
    """An escaped label cut to `limit` characters, the last one "…" (an entity counts as one character)."""
    token, mark, nth = label.partition("\u200b")  # a repeated token's occurrence number (style.labels) stays whole
    raw = html.unescape(token)
    return label if len(raw) <= limit else esc(raw[:limit - 1]) + "…" + mark + nth


def category_ticks(names: list[str], axis: str) -> dict:
    """An axis's tick settings that keep every one of its (escaped) category labels readable: all drawn, at
    TICK_MIN_PX or more; on a dense axis shortened (short_label) and, on the x axis, turned upright."""
    n = len(names)
    if n <= DENSE:
        return dict(tickmode="array", tickvals=list(names), ticktext=list(names))
    size = 11 if n <= 20 else TICK_MIN_PX
    text = [short_label(x) for x in names]
    out = dict(tickmode="array", tickvals=list(names), ticktext=text, tickfont=dict(size=size))
    if axis == "x" and max(text_px(x, size) for x in text) + 6 > PLOT_PX / n:  # side by side they would touch
        out.update(tickangle=-90, tickfont=dict(size=TICK_MIN_PX))  # upright, a line apart: the smallest size
    return out


def dense_height(n_rows: int, n_cols: int) -> int:
    """The least height that gives each of n_rows rows ROW_PX when the axes are dense (the upright key labels and
    a title above the plot), else 0."""
    return ROW_PX * n_rows + 230 if max(n_rows, n_cols) > DENSE else 0


def _matrix_parts(values, x_labels=None, y_labels=None, *, title="", x_title="", y_title="",
                  zmin=None, zmax=None, colorscale=DIVERGING, reversescale=True, decimals=2,
                  show_text=True, height=None, highlight=None, zmid=None) -> tuple[dict, dict]:
    """matrix_heatmap's trace and layout as plain dicts, so that callers can add to the layout before the
    figure is built: plotly validates a figure's layout once when it is built from one dict, while every
    later update_layout / update_xaxes pays that again (3-5x the cost of the whole build)."""
    z = to_np(values)
    n_rows, n_cols = z.shape
    title, x_title, y_title = esc(title), esc(x_title), esc(y_title)  # words are text to plotly too
    xs = labels(x_labels if x_labels is not None else [str(j) for j in range(n_cols)])
    ys = labels(y_labels if y_labels is not None else [str(i) for i in range(n_rows)])
    trace = dict(
        z=np.where(np.isfinite(z), z, np.nan), x=xs, y=ys,
        text=_strings(cell_text(z, decimals)) if show_text else None, texttemplate="%{text}" if show_text else None,
        colorscale=colorscale, reversescale=reversescale, zmin=zmin, zmax=zmax, zmid=zmid,
        hovertemplate=f"{y_title} %{{y}} · {x_title} %{{x}}<br>%{{z:.4g}}<extra></extra>",
        xgap=1, ygap=1, colorbar=dict(thickness=12) if max(n_rows, n_cols) > DENSE else None,
        # numbers written in the cells are the map's key: no colour bar beside them (it also costs a chart that
        # follows a browser choice a quarter of each redraw)
        showscale=not show_text,
    )
    shapes = highlight_shapes(highlight) if highlight is not None else []
    layout = dict(yaxis=dict(autorange="reversed", title=dict(text=y_title), type="category", **category_ticks(ys, "y")),
                  xaxis=dict(title=dict(text=x_title), side="top", type="category", **category_ticks(xs, "x")),
                  title=dict(text=title), margin=margins(title),
                  height=max(height or max(220, 46 * n_rows + 120), dense_height(n_rows, n_cols)),
                  minreducedwidth=COL_PX * n_cols if n_cols > DENSE else None)
    if shapes:
        layout["shapes"] = shapes
    return trace, layout


def highlight_shapes(highlight) -> list[dict]:
    """A red outline around each cell marked True in the boolean matrix `highlight` (matrix_heatmap's `highlight`;
    a chart that follows a browser choice sends one list per variant): one path of squares in the axes' cell
    coordinates, which Plotly draws in a fraction of the time of one shape per cell (a map with 50 outlined cells:
    a quarter of its redraw)."""
    cells = list(zip(*np.nonzero(np.asarray(highlight, dtype=bool))))
    if not cells:
        return []
    path = "".join(f"M{j - 0.5:g},{i - 0.5:g}H{j + 0.5:g}V{i + 0.5:g}H{j - 0.5:g}Z" for i, j in cells)
    return [dict(type="path", path=path, line=dict(color=OUTLINE, width=3), xref="x", yref="y")]


def heatmap_variants(maps, decimals: int = 2, show_text=None) -> list[tuple]:
    """A heatmap's z and cell texts for each map of `maps` (same shape), as _matrix_parts writes them:
    app.fast.choice.follow's traces for a map that follows a browser choice."""
    z = np.stack([to_np(m) for m in maps]).astype(np.float64)
    if show_text is None:
        show_text = max(z.shape[1:]) <= TEXT_LIMIT
    traces = [(0, "z", np.where(np.isfinite(z), z, np.nan))]
    if show_text:
        traces.append((0, "text", [cell_text(m, decimals) for m in z]))
    return traces


def _strings(rows: list[list[str]]) -> np.ndarray:
    """A grid of cell texts as an object array: plotly deep-copies and checks nested lists cell by cell (4x
    slower); the figure's JSON is the same."""
    return np.array(rows, dtype=object)


def matrix_heatmap(values, x_labels=None, y_labels=None, *, title="", x_title="", y_title="",
                   zmin=None, zmax=None, colorscale=DIVERGING, reversescale=True, decimals=2,
                   show_text=True, height=None, highlight=None, zmid=None) -> Figure:
    """A labelled heatmap with the numbers written in the cells. `highlight` is an optional
    boolean matrix; marked cells get a red outline (e.g. cells that differ from a printed value)."""
    trace, layout = _matrix_parts(values, x_labels, y_labels, title=title, x_title=x_title, y_title=y_title,
                                  zmin=zmin, zmax=zmax, colorscale=colorscale, reversescale=reversescale,
                                  decimals=decimals, show_text=show_text, height=height, highlight=highlight,
                                  zmid=zmid)
    return figure([dict(type="heatmap", **trace)], layout)


def _attention_parts(weights, query_labels, key_labels, *, title="", query_title="query", key_title="key",
                     show_text=None, height=None, highlight=None, decimals=2) -> tuple[dict, dict]:
    w = to_np(weights)
    if show_text is None:
        show_text = max(w.shape) <= TEXT_LIMIT
    return _matrix_parts(w, key_labels, query_labels, title=title, x_title=f"{key_title} →",
                         y_title=f"{query_title} ↓", zmin=0.0, zmax=1.0, colorscale=ATTN_SCALE,
                         reversescale=False, show_text=show_text, height=height, highlight=highlight,
                         decimals=decimals)


def attention_heatmap(weights, query_labels, key_labels, *, title="", query_title="query",
                      key_title="key", show_text=None, height=None, highlight=None, decimals=2) -> Figure:
    """Attention weights (Lq, Lk) on the shared 0..1 scale; rows are queries, columns keys."""
    trace, layout = _attention_parts(weights, query_labels, key_labels, title=title, query_title=query_title,
                                     key_title=key_title, show_text=show_text, height=height,
                                     highlight=highlight, decimals=decimals)
    return figure([dict(type="heatmap", **trace)], layout)


def kv_groups(n_heads: int, kv_heads: int) -> list[tuple[int, int, int]]:
    """(first query head, last query head, key/value head), 0-based, one per key/value head: with grouped-query
    attention query head i reads key/value head i // (n_heads / kv_heads) (model.nn.attention)."""
    if kv_heads < 1 or n_heads % kv_heads:
        raise ValueError(f"{kv_heads} key/value heads do not divide {n_heads} query heads")
    group = n_heads // kv_heads
    return [(k * group, (k + 1) * group - 1, k) for k in range(kv_heads)]


GRID_PX = 700        # about the width the inspector's grid is drawn at (the main column)
GROUP_FONT = 11
BRACKET_PX = 36      # the brackets' line: this far above the plot, over the heads' numbers


def head_grid(weights, *, layer_title="layer", head_title="head", gap: int = 1, height=None,
              kv_labels: list[str] | None = None) -> Figure:
    """All layers × heads at a glance, tiled into ONE heatmap (much faster than subplots).
    weights: (layers, heads, Lq, Lk). kv_labels (grouped-query attention): one label per key/value head, drawn
    over a bracket spanning the query heads that share it (kv_groups)."""
    w = to_np(weights)
    n_layers, n_heads, lq, lk = w.shape
    groups = kv_groups(n_heads, len(kv_labels)) if kv_labels else []
    layer_title, head_title = esc(layer_title), esc(head_title)
    canvas = np.full((n_layers * lq + (n_layers - 1) * gap, n_heads * lk + (n_heads - 1) * gap), np.nan)
    for l in range(n_layers):
        for h in range(n_heads):
            r, c = l * (lq + gap), h * (lk + gap)
            canvas[r:r + lq, c:c + lk] = w[l, h]
    shapes, annotations, top = [], [], 40
    for (first, last, _), text in zip(groups, kv_labels or []):
        x0, x1 = first * (lk + gap) - 0.5, last * (lk + gap) + lk - 0.5
        room = max(60.0, GRID_PX * (last - first + 1) / n_heads - 8)
        shown = wrapped(esc(text), GROUP_FONT, room)
        top = max(top, 40 + BRACKET_PX + shown.count("<br>") * 14 + 18)
        line = dict(type="line", xref="x", yref="paper", ysizemode="pixel", yanchor=1, line=dict(color="#666", width=1))
        shapes += [{**line, "x0": x0, "x1": x1, "y0": BRACKET_PX, "y1": BRACKET_PX},
                   {**line, "x0": x0, "x1": x0, "y0": BRACKET_PX - 5, "y1": BRACKET_PX},
                   {**line, "x0": x1, "x1": x1, "y0": BRACKET_PX - 5, "y1": BRACKET_PX}]
        annotations.append(dict(x=(x0 + x1) / 2, y=1, xref="x", yref="paper", yanchor="bottom", yshift=BRACKET_PX + 2,
                                text=shown, showarrow=False, font=dict(size=GROUP_FONT)))
    layout = dict(
        yaxis=dict(autorange="reversed", showticklabels=True, tickmode="array",
                   tickvals=[l * (lq + gap) + (lq - 1) / 2 for l in range(n_layers)],
                   ticktext=[f"{layer_title} {l + 1}" for l in range(n_layers)], scaleanchor="x"),
        xaxis=dict(side="top", tickmode="array", tickvals=[h * (lk + gap) + (lk - 1) / 2 for h in range(n_heads)],
                   ticktext=[f"{head_title} {h + 1}" for h in range(n_heads)]),
        margin=margins(top=top), height=(height or min(900, 120 + 170 * n_layers)) + top - 40, plot_bgcolor="white")
    if groups:
        layout.update(shapes=shapes, annotations=annotations)
    return figure([dict(type="heatmap", z=canvas, colorscale=ATTN_SCALE, zmin=0, zmax=1, hoverongaps=False,
                        hovertemplate="%{z:.3f}<extra></extra>")], layout)


def grid_cell(point, shape: tuple[int, int, int, int], gap: int = 1) -> tuple[int, int] | None:
    """The (layer, head) whose tile of head_grid(weights of `shape`, gap=gap) holds the clicked `point`
    ({"x": column, "y": row}, as the browser sent it), or None for a gap, a point outside or anything malformed."""
    n_layers, n_heads, lq, lk = shape
    try:
        x, y = point["x"], point["y"]
    except (TypeError, KeyError):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v == int(v) for v in (x, y)):
        return None
    layer, row = divmod(int(y), lq + gap)
    head, col = divmod(int(x), lk + gap)
    if not (0 <= layer < n_layers and 0 <= head < n_heads and row < lq and col < lk and x >= 0 and y >= 0):
        return None
    return layer, head


def head_tiles(weights, query_labels, key_labels, *, head_title="head", query_title="query", key_title="key",
               per_row=4, show_text=None, height=None, gap: int = 1) -> Figure:
    """Several heads' attention maps (H, Lq, Lk) tiled side by side in ONE heatmap on the shared 0..1
    scale, with token labels and a title over each head (one heatmap builds far faster than subplots); `gap`
    cells between the tiles."""
    w = to_np(weights)
    n_heads, lq, lk = w.shape
    q_labels, k_labels = [esc(q) for q in query_labels], [esc(k) for k in key_labels]
    head_title, query_title, key_title = esc(head_title), esc(query_title), esc(key_title)
    per_row = max(1, min(per_row, n_heads))
    n_block_rows = -(-n_heads // per_row)
    rows = n_block_rows * lq + (n_block_rows - 1) * gap
    cols = per_row * lk + (per_row - 1) * gap
    canvas = np.full((rows, cols), np.nan)
    text = [["" for _ in range(cols)] for _ in range(rows)]
    hover = [["" for _ in range(cols)] for _ in range(rows)]
    if show_text is None:
        show_text = max(lq, lk) <= 8
    annotations = []
    for h in range(n_heads):
        br, bc = divmod(h, per_row)
        y0, x0 = br * (lq + gap), bc * (lk + gap)
        canvas[y0:y0 + lq, x0:x0 + lk] = w[h]
        for i in range(lq):
            for j in range(lk):
                v = w[h, i, j]
                text[y0 + i][x0 + j] = number(v, ".2f") if show_text else ""
                hover[y0 + i][x0 + j] = (f"{head_title} {h + 1}<br>{query_title}: {q_labels[i]}<br>"
                                         f"{key_title}: {k_labels[j]}<br>{number(v, '.4f')}")
        annotations.append(dict(x=x0 + (lk - 1) / 2, y=y0 - 0.5, yshift=10, text=f"<b>{head_title} {h + 1}</b>",
                                showarrow=False, xref="x", yref="y", yanchor="bottom"))
    layout = dict(
        xaxis=dict(tickmode="array", tickvals=[bc * (lk + gap) + j for bc in range(per_row) for j in range(lk)],
                   ticktext=[k for _ in range(per_row) for k in k_labels], title=dict(text=f"{key_title} →"),
                   showgrid=False, zeroline=False, range=[-0.5, cols - 0.5]),
        yaxis=dict(tickmode="array", tickvals=[br * (lq + gap) + i for br in range(n_block_rows) for i in range(lq)],
                   ticktext=[q for _ in range(n_block_rows) for q in q_labels], autorange="reversed",
                   title=dict(text=f"{query_title} ↓"), showgrid=False, zeroline=False),
        # the heads' titles sit in the top margin, under the strip where Plotly's mode bar appears
        annotations=annotations, plot_bgcolor="rgba(0,0,0,0)", margin=margins(top=40 + MODEBAR_ROOM),
        height=(height or min(1000, 110 + n_block_rows * (lq * 34 + 40))) + MODEBAR_ROOM)
    return figure([dict(type="heatmap", z=canvas, text=_strings(text) if show_text else None,
                        texttemplate="%{text}" if show_text else None,
                        hovertext=_strings(hover), hovertemplate="%{hovertext}<extra></extra>", hoverongaps=False,
                        colorscale=ATTN_SCALE, zmin=0, zmax=1, xgap=1, ygap=1,
                        colorbar=dict(title=dict(text=""), thickness=14))], layout)


def scale_top(weights) -> float:
    """The top of the colour scale for many small maps: 1 (the shared 0…1 scale), unless every weight is below
    half of it, then the largest weight rounded up to two significant digits, so that maps of weights near 1/L
    (many heads of a narrow width) are not all drawn white. A page that uses it says the range."""
    top = float(np.nanmax(to_np(weights))) if np.size(weights) else 1.0
    if not np.isfinite(top) or top >= 0.5 or top <= 0:
        return 1.0
    digits = 1 - math.floor(math.log10(top))
    return math.ceil(top * 10 ** digits) / 10 ** digits


def head_multiples(weights, query_labels, key_labels, *, head_title="head", query_title="query", key_title="key",
                   per_row=8) -> Figure:
    """Many heads' attention maps (H, Lq, Lk) as small multiples: square tiles of per_row a row, each titled by its
    head's number, on 0 … scale_top(weights) (the shared 0..1 scale unless every weight is small); the tokens are in
    the hover (a tile is too small for its labels; the page enlarges one head with its labels)."""
    w = to_np(weights)
    n_heads, lq, lk = w.shape
    per_row = max(1, min(per_row, n_heads))
    block_rows = -(-n_heads // per_row)
    fig = head_tiles(w, query_labels, key_labels, head_title=head_title, query_title=query_title,
                     key_title=key_title, per_row=per_row, show_text=False,
                     height=120 + block_rows * (MULTIPLE_PX + 24), gap=max(2, round(max(lq, lk) / 4)))
    layout = fig["layout"]
    for a in layout["annotations"]:
        a.update(text=a["text"].replace("<b>", "").replace("</b>", ""), font=dict(size=11), yshift=2)
    bare = {"showticklabels": False, "ticks": "", "tickmode": None, "tickvals": None, "ticktext": None,
            "constrain": "domain"}
    layout["xaxis"] = {**layout["xaxis"], **bare}
    layout["yaxis"] = {**layout["yaxis"], **bare, "scaleanchor": "x"}
    return figure([{**fig["data"][0], "zmax": scale_top(w)}], layout)


MULTIPLE_PX = 96  # a small multiple's side, about (8 a row in the main column)


def numeric_heatmap(z, x=None, y=None, *, title="", x_title="", y_title="", colorscale=DIVERGING,
                    reversescale=True, zmin=None, zmax=None, zmid=None, height=420, vlines=(),
                    colorbar_title="", narrow: bool = False) -> Figure:
    """A heatmap for large matrices (numeric axes, no cell text). z: (rows, cols). `narrow`: drawn in one of two
    columns, its title wrapped to fit."""
    z = to_np(z).astype(np.float32)  # compact: plotly sends float32 arrays as binary
    title, x_title, y_title, colorbar_title = esc(title), esc(x_title), esc(y_title), esc(colorbar_title)
    lines = 0
    if narrow and title:
        title = wrapped(title, 17)
        lines = title.count("<br>")
        height += TITLE_LINE_PX * lines
    x = np.arange(z.shape[1]) if x is None else np.asarray(x)
    y = np.arange(z.shape[0]) if y is None else np.asarray(y)
    layout = dict(yaxis=dict(autorange="reversed", title=dict(text=y_title)), xaxis=dict(title=dict(text=x_title)),
                  title=dict(text=title), height=height,
                  margin=margins(title, (50 if title else 20) + TITLE_LINE_PX * lines))
    if len(vlines):  # what fig.add_vline draws: a dashed line over the y axis' whole domain
        layout["shapes"] = [dict(type="line", x0=v, x1=v, xref="x", y0=0, y1=1, yref="y domain",
                                 line=dict(color="black", width=2, dash="dash")) for v in vlines]
    return figure([dict(type="heatmap", z=z, x=x, y=y, colorscale=colorscale, reversescale=reversescale, zmin=zmin,
                        zmax=zmax, zmid=zmid, colorbar=dict(title=dict(text=colorbar_title)),
                        hovertemplate=f"{y_title} %{{y}} · {x_title} %{{x}}<br>%{{z:.4f}}<extra></extra>")], layout)


# ----------------------------------------------------------------------------- attention stages

def stage_height(n_rows: int) -> int:
    return max(240, 46 * n_rows + 150) if n_rows <= TEXT_LIMIT else min(1400, ROW_PX * n_rows + 240)


_TITLE_ROOM = dict(y=0.995, yanchor="top", x=0.0, xanchor="left", font=dict(size=15))


def _with_title_room(layout: dict) -> dict:
    """Keep the figure title clear of the key labels on the top axis (a layout not yet built into a figure)."""
    if layout["title"]["text"]:
        layout = {**layout, "title": {**layout["title"], **_TITLE_ROOM}, "margin": {**layout["margin"], "t": 95}}
    return layout


def stage_figure(stage: str, values, query_labels, key_labels, *, title: str, query_title: str = "query",
                 key_title: str = "key", dim_title: str = "dimension", highlight=None, decimals: int = 2) -> Figure:
    """One stage of QKᵀ → ÷√dₖ → mask → softmax → ×V as a labelled heatmap. Rows are queries; columns
    are keys (value dimensions for the output O). Attention weights use the shared 0..1 scale; scores
    a diverging scale around 0; the output a scale that fits its signs."""
    z = to_np(values)
    show_text = max(z.shape) <= TEXT_LIMIT
    height = stage_height(z.shape[0])
    if stage == "weights":
        trace, layout = _attention_parts(z, query_labels, key_labels, title=title, query_title=query_title,
                                         key_title=key_title, show_text=show_text, height=height,
                                         highlight=highlight, decimals=decimals)
    else:
        if stage == "output":
            cols, x_title = [f"{j + 1}" for j in range(z.shape[1])], f"{dim_title} →"
        else:
            cols, x_title = key_labels, f"{key_title} →"
        trace, layout = _matrix_parts(z, cols, query_labels, title=title, x_title=x_title,
                                      y_title=f"{query_title} ↓", decimals=decimals, show_text=show_text,
                                      height=height, highlight=highlight, **value_scale(z))
    return figure([dict(type="heatmap", **trace)], _with_title_room(layout))


__all__ = ["TEXT_LIMIT", "attention_heatmap", "category_ticks", "cell_text", "head_grid", "head_multiples", "head_tiles",
           "lift_title",
           "matrix_heatmap", "numeric_heatmap", "stage_figure", "stage_height"]
