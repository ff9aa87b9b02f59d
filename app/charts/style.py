"""One palette, one attention colour scale, one escaping of labels, shared layout helpers."""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")
ATTN_SCALE = "Blues"      # attention weights, always on 0…1
DIVERGING = "RdBu"        # signed values (scores), reversed so that positive is red, centred on 0
SEQUENTIAL = "Viridis"    # values of one sign (e.g. an output that is all positive)
OUTLINE = "#d62728"       # cells marked on a heatmap
FONT_FAMILY = "sans-serif"


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def to_np(x) -> np.ndarray:
    """A float numpy array from a tensor, list or array."""
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x, dtype=float)


def esc(label) -> str:
    """Plotly reads labels as a subset of HTML: `<s>` would vanish and strike the rest through.
    Every token label that reaches a figure goes through here."""
    return html.escape(str(label), quote=False)


def labels(items) -> list[str]:
    """Escaped labels, made distinct: plotly merges equal category labels into one row or bar,
    so a repeated token gets a zero-width space and its occurrence number."""
    seen: dict[str, int] = {}
    out = []
    for item in items:
        text = esc(item)
        n = seen.get(text, 0)
        seen[text] = n + 1
        out.append(text if n == 0 else f"{text}\u200b ({n + 1})")
    return out


def margins(title: str = "", top: int | None = None) -> dict:
    return dict(l=10, r=10, t=top if top is not None else (60 if title else 30), b=10)


def legend_below() -> dict:
    """Legends go under the plot: above it they collide with the title and the toolbar."""
    return dict(orientation="h", yanchor="top", y=-0.18, x=0, xanchor="left")


def lift_title(fig: go.Figure, extra: int = 36) -> go.Figure:
    """Heatmaps with the key axis on top: move the figure title above the axis title."""
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 30
    fig.update_layout(margin=dict(t=top + extra), height=(fig.layout.height or 400) + extra,
                      title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=10), font=dict(size=14)))
    return fig


def value_scale(z: np.ndarray) -> dict:
    """Heatmap colour settings for arbitrary values: diverging around 0 when both signs occur,
    sequential when all values have one sign."""
    finite = z[np.isfinite(z)]
    if finite.size and (finite.min() >= 0 or finite.max() <= 0):
        return dict(colorscale=SEQUENTIAL, reversescale=False, zmin=None, zmax=None, zmid=None)
    zmax = float(np.abs(finite).max()) if finite.size else 1.0
    return dict(colorscale=DIVERGING, reversescale=True, zmin=-zmax, zmax=zmax, zmid=0)


MODEBAR_ROOM = 30  # px: the toolbar plotly shows on hover sits at the figure's top right


def toolbar_room(fig: go.Figure) -> go.Figure:
    """Keep a titled figure's title clear of the plotly toolbar: a strip at the top for the toolbar,
    the title just below it (the plot area moves down by the same amount)."""
    if not (fig.layout.title and fig.layout.title.text) or getattr(fig.layout, "meta", None) == "toolbar-room":
        return fig
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 80
    pad = fig.layout.title.pad.t if fig.layout.title.pad and fig.layout.title.pad.t is not None else 0
    fig.update_layout(margin=dict(t=top + MODEBAR_ROOM), height=(fig.layout.height or 450) + MODEBAR_ROOM,
                      title=dict(yref="container", y=1.0, yanchor="top", pad=dict(t=pad + MODEBAR_ROOM - 6)),
                      meta="toolbar-room")
    return fig


class FrozenFigure(go.Figure):
    """A figure that is only drawn from now on (one shared by every session, see app.resources.shared_figure).
    st.plotly_chart calls `to_dict()` on every draw, a deep copy that also packs each array as base64 (~5 ms
    for a heatmap grid here); a frozen figure makes that copy once and hands it out again. Streamlit only
    reads it (it serialises it to JSON)."""

    def to_dict(self):
        cached = self.__dict__.get("_atlas_dict")
        if cached is None:
            cached = super().to_dict()
            self.__dict__["_atlas_dict"] = cached
        return cached


def freeze_figure(fig: go.Figure) -> go.Figure:
    """Mark a finished figure as frozen (FrozenFigure); changing it afterwards would not show, so call this
    only on figures nobody changes again."""
    if type(fig) is go.Figure:
        fig.__class__ = FrozenFigure
    return fig
