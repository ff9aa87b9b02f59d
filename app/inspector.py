"""Pure helpers and figure builders for the attention inspector (no st.* calls)."""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go

from app.charts import _np, _unique

HEAD_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#e377c2", "#8c564b",
                "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd"]
MAX_CHARS = 2000


def label(piece: str) -> str:
    """A token as a plotly label: HTML-escaped (plotly reads a few tags), control chars shown."""
    shown = piece.replace("\n", "\\n").replace("\t", "\\t")
    return html.escape(shown, quote=False) or "∅"


def labels(pieces: list[str]) -> list[str]:
    return [label(p) for p in pieces]


def clean_input(text: str, max_chars: int = MAX_CHARS) -> tuple[str, bool]:
    """Strip surrounding whitespace and cut to max_chars; returns (text, was_cut)."""
    text = (text or "").strip()
    return (text[:max_chars], True) if len(text) > max_chars else (text, False)


def token_table(ids: list[int], pieces: list[str], tokenizer, seen: frozenset[int] | None) -> list[dict]:
    rows = []
    for i, (tid, piece) in enumerate(zip(ids, pieces)):
        special = tid in (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id)
        rows.append({"#": i, "piece": piece, "id": tid, "byte": bool(tokenizer.is_byte(tid)),
                     "seen in training": (tid in seen) if (seen and not special) else None})
    return rows


def unseen(ids: list[int], pieces: list[str], tokenizer, seen: frozenset[int]) -> list[str]:
    """Pieces the model never met in training (byte-fallback pieces included)."""
    specials = {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id}
    return [p for i, p in zip(ids, pieces) if i not in specials and i not in seen]


def head_view(weights, q_labels: list[str], k_labels: list[str], heads: list[int], *,
              query_title="query", key_title="key", levels: int = 6) -> go.Figure:
    """BertViz-style head view for one layer: a line from each query (left) to each key (right),
    its opacity the attention weight, one colour per head. weights: (H, Lq, Lk).
    Lines are grouped by head and by weight level, so the figure has few traces."""
    w = _np(weights)
    H, Lq, Lk = w.shape
    fig = go.Figure()
    yq = np.linspace(0, 1, Lq) if Lq > 1 else np.array([0.5])
    yk = np.linspace(0, 1, Lk) if Lk > 1 else np.array([0.5])
    edges = np.linspace(0.0, 1.0, levels + 1)
    for h in heads:
        colour = HEAD_COLOURS[h % len(HEAD_COLOURS)]
        for lvl in range(levels):
            lo, hi = edges[lvl], edges[lvl + 1]
            sel = np.argwhere((w[h] > max(lo, 0.02)) & (w[h] <= hi + 1e-9))
            if not len(sel):
                continue
            xs, ys = [], []
            for qi, ki in sel:
                xs += [0, 1, None]
                ys += [yq[qi], yk[ki], None]
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                     line=dict(color=colour, width=1 + 4 * hi), opacity=min(1.0, 0.15 + hi * 0.85 / len(heads) ** 0.5)))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", line=dict(color=colour, width=4),
                                 name=f"head {h + 1}"))
    fig.add_trace(go.Scatter(x=[-0.02] * Lq, y=yq, mode="text", text=q_labels, textposition="middle left",
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=[1.02] * Lk, y=yk, mode="text", text=k_labels, textposition="middle right",
                             hoverinfo="skip", showlegend=False))
    fig.update_xaxes(visible=False, range=[-0.45, 1.45])
    fig.update_yaxes(visible=False, autorange="reversed")
    fig.update_layout(height=max(340, 28 * max(Lq, Lk) + 110), margin=dict(l=10, r=10, t=40, b=40),
                      plot_bgcolor="white", legend=dict(orientation="h", y=-0.02, yanchor="top", x=0.5, xanchor="center"),
                      annotations=[dict(x=0, y=1.0, xref="x", yref="paper", text=f"<b>{query_title}</b>",
                                        showarrow=False, yanchor="bottom"),
                                   dict(x=1, y=1.0, xref="x", yref="paper", text=f"<b>{key_title}</b>",
                                        showarrow=False, yanchor="bottom")])
    return fig


def bar_chart(values, names: list[str], *, title="", x_title="", y_title="", colour="#1f77b4",
              range_01: bool = True, horizontal=False) -> go.Figure:
    v = _np(values)
    names = _unique(names)  # a category axis would merge a repeated token into one bar
    if horizontal:
        fig = go.Figure(go.Bar(x=v, y=names, orientation="h", marker_color=colour,
                               text=[f"{x:.3f}" for x in v], textposition="auto"))
        fig.update_yaxes(autorange="reversed", type="category", title=y_title)
        fig.update_xaxes(title=x_title, range=[0, 1] if range_01 else None)
        height = max(240, 26 * len(names) + 80)
    else:
        fig = go.Figure(go.Bar(x=names, y=v, marker_color=colour, text=[f"{x:.2f}" for x in v], textposition="auto"))
        fig.update_xaxes(type="category", title=x_title)
        fig.update_yaxes(title=y_title, range=[0, 1] if range_01 else None)
        height = 300
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    return fig


def top_tokens(probs, tokenizer, k: int = 10) -> list[tuple[str, float, int]]:
    p = _np(probs)
    order = np.argsort(-p)[:k]
    return [(tokenizer.id_to_piece(int(i)), float(p[i]), int(i)) for i in order]


def stats_rows(stats: list[dict]) -> list[dict]:
    """Head statistics as table rows, 1-based layer/head, rounded."""
    out = []
    for s in stats:
        row = {"layer": s["layer"] + 1, "head": s["head"] + 1}
        for k in ("entropy", "entropy_norm", "mean_distance", "diagonal", "previous", "first", "last", "max_weight"):
            v = s.get(k)
            row[k] = None if v is None or (isinstance(v, float) and np.isnan(v)) else round(float(v), 3)
        out.append(row)
    return out


def averages(stats: list[dict]) -> list[dict]:
    """Mean of each statistic per layer, and over all layers and heads."""
    keys = ("entropy", "mean_distance", "diagonal", "previous", "first", "max_weight")
    groups: dict = {}
    for s in stats:
        groups.setdefault(s["layer"], []).append(s)
    rows = []
    for layer, items in sorted(groups.items()):
        rows.append({"layer": str(layer + 1), **{k: round(float(np.nanmean([i[k] for i in items])), 3) for k in keys}})
    if stats:
        rows.append({"layer": "all", **{k: round(float(np.nanmean([i[k] for i in stats])), 3) for k in keys}})
    return rows
