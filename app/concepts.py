"""Pure helpers for the concept pages (positional encoding, masks, training recipe, why
self-attention): input parsing with bilingual error messages, small figure builders and the
function that pulls the three kinds of attention out of any model. No st.* calls here."""
from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
import torch

from app.charts import _np

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


class InputError(ValueError):
    """Bad user input, with the message in both languages (the page shows it with ui.fail)."""

    def __init__(self, en: str, ko: str):
        super().__init__(en)
        self.en, self.ko = en, ko


# ----------------------------------------------------------------------------- parsing

def parse_int(token: str, lo: int, hi: int, name: str = "value") -> int:
    """One integer from text ('4000', '4e3', '4_000'), within [lo, hi], or an InputError."""
    s = token.strip().replace("_", "")
    if not s:
        raise InputError(f"An empty {name} in the list.", f"목록에 빈 {name} 값이 있습니다.")
    try:
        value = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            raise InputError(f"“{token.strip()}” is not a whole number.",
                             f"“{token.strip()}”은(는) 정수가 아닙니다.") from None
        if not math.isfinite(f) or not f.is_integer():
            raise InputError(f"“{token.strip()}” is not a whole number.",
                             f"“{token.strip()}”은(는) 정수가 아닙니다.")
        if abs(f) > 1e18:
            raise InputError(f"{name} {token.strip()} is far too large (allowed: {lo:,}…{hi:,}).",
                             f"{name} {token.strip()}은(는) 너무 큽니다 (허용 범위: {lo:,}…{hi:,}).")
        value = int(f)
    if not lo <= value <= hi:
        raise InputError(f"{name} = {value:,} is outside the allowed range {lo:,}…{hi:,}.",
                         f"{name} = {value:,}은(는) 허용 범위 {lo:,}…{hi:,}를 벗어났습니다.")
    return value


def parse_int_list(text: str, lo: int, hi: int, max_items: int, name: str = "value") -> list[int]:
    """'16, 64, 256' -> [16, 64, 256] (commas, semicolons or spaces between numbers)."""
    parts = [p for p in re.split(r"[,;\s]+", text or "") if p]
    if not parts:
        raise InputError("The list is empty: enter at least one number.",
                         "목록이 비어 있습니다. 숫자를 하나 이상 입력하세요.")
    if len(parts) > max_items:
        raise InputError(f"At most {max_items} numbers, got {len(parts)}.",
                         f"숫자는 최대 {max_items}개까지입니다 ({len(parts)}개 입력됨).")
    return [parse_int(p, lo, hi, name) for p in parts]


def parse_pairs(text: str, limits: tuple[tuple[int, int], tuple[int, int]], max_items: int,
                names=("d_model", "warmup")) -> list[tuple[int, int]]:
    """'512, 4000; 512 8000 | 256:4000' -> [(512, 4000), (512, 8000), (256, 4000)].
    Pairs are separated by ';', '|' or new lines; the two numbers by ',', ':', '/', 'x' or spaces."""
    chunks = [c.strip() for c in re.split(r"[;\n|]+", text or "") if c.strip()]
    if not chunks:
        raise InputError("The list is empty: enter pairs such as “512, 4000; 256, 4000”.",
                         "목록이 비어 있습니다. “512, 4000; 256, 4000”처럼 쌍을 입력하세요.")
    if len(chunks) > max_items:
        raise InputError(f"At most {max_items} pairs, got {len(chunks)}.",
                         f"쌍은 최대 {max_items}개까지입니다 ({len(chunks)}개 입력됨).")
    out = []
    for c in chunks:
        nums = [p for p in re.split(r"[,:/x×\s()]+", c.strip("() ")) if p]
        if len(nums) != 2:
            raise InputError(f"“{c}” is not a pair of two numbers ({names[0]}, {names[1]}).",
                             f"“{c}”은(는) 두 숫자의 쌍({names[0]}, {names[1]})이 아닙니다.")
        out.append((parse_int(nums[0], *limits[0], names[0]), parse_int(nums[1], *limits[1], names[1])))
    return out


def split_words(text: str, max_words: int) -> tuple[list[str], bool]:
    """Whitespace words, at most max_words (returns (words, truncated)). Empty -> InputError."""
    words = (text or "").split()
    if not words:
        raise InputError("The sentence is empty: type a few words.", "문장이 비어 있습니다. 단어를 몇 개 입력하세요.")
    return words[:max_words], len(words) > max_words


def piece_label(piece: str) -> str:
    """SentencePiece marks a leading space with '▁'; drop it for labels (keep a lone '▁')."""
    return piece[1:] if piece.startswith("▁") and len(piece) > 1 else piece


# ----------------------------------------------------------------------------- attention kinds

KIND_QK = {  # which sequence gives the queries (rows) and keys (columns)
    "encoder_self": ("source", "source"),
    "decoder_self": ("target", "target"),
    "cross": ("target", "source"),
}


@torch.no_grad()
def attention_maps(model, src_ids: list[int], tgt_ids: list[int]) -> dict[str, np.ndarray]:
    """Every attention of an encoder-decoder model on one (source, decoder input) pair.

    Works for any model.Transformer with architecture "encoder-decoder" (a seeded toy model now,
    the trained EN->KO model later). tgt_ids is the decoder input as fed in training (usually
    starting with BOS). Returns {kind: (layers, heads, L_query, L_key)} float arrays."""
    if not src_ids or not tgt_ids:
        raise InputError("Both sentences need at least one token.", "두 문장 모두 토큰이 하나 이상 필요합니다.")
    was_training = model.training
    model.eval()
    try:
        dev = model.device
        out = model(torch.tensor([src_ids], device=dev), torch.tensor([tgt_ids], device=dev),
                    return_attention=True)
    finally:
        model.train(was_training)
    rec = out.attention
    return {kind: rec.stack(kind)[:, 0].float().cpu().numpy() for kind in rec.kinds()}


# ----------------------------------------------------------------------------- figures

def numeric_heatmap(z, x=None, y=None, *, title="", x_title="", y_title="", colorscale="RdBu",
                    reversescale=True, zmin=None, zmax=None, zmid=None, height=420, vlines=(),
                    colorbar_title="") -> go.Figure:
    """A heatmap for large matrices (numeric axes, no cell text). z: (rows, cols)."""
    z = _np(z).astype(np.float32)  # compact: plotly sends float32 arrays as binary
    x = np.arange(z.shape[1]) if x is None else np.asarray(x)
    y = np.arange(z.shape[0]) if y is None else np.asarray(y)
    fig = go.Figure(go.Heatmap(z=z, x=x, y=y, colorscale=colorscale, reversescale=reversescale, zmin=zmin,
                               zmax=zmax, zmid=zmid, colorbar=dict(title=colorbar_title),
                               hovertemplate=f"{y_title} %{{y}} · {x_title} %{{x}}<br>%{{z:.4f}}<extra></extra>"))
    for v in vlines:
        fig.add_vline(x=v, line=dict(color="black", width=2, dash="dash"))
    fig.update_yaxes(autorange="reversed", title=y_title)
    fig.update_xaxes(title=x_title)
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    return fig


def line_figure(x, series: dict, *, title="", x_title="", y_title="", log_x=False, log_y=False,
                height=380, mode="lines", markers: dict | None = None) -> go.Figure:
    """Several named curves over a shared x. markers: {name: (xs, ys, texts)} drawn as points."""
    fig = go.Figure()
    x = _np(x)
    for i, (name, y) in enumerate(series.items()):
        fig.add_trace(go.Scatter(x=x, y=_np(y), name=name, mode=mode,
                                 line=dict(color=PALETTE[i % len(PALETTE)], width=2)))
    for i, (name, (xs, ys, texts)) in enumerate((markers or {}).items()):
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), name=name, mode="markers+text", text=list(texts),
                                 textposition="top center", marker=dict(size=10, symbol="star", color="black"),
                                 showlegend=True))
    fig.update_xaxes(title=x_title, type="log" if log_x else "linear")
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    # legend under the x-axis title, so it never covers the figure title
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10),
                      legend=dict(orientation="h", yanchor="top", y=-0.22, x=0))
    return fig


def lift_title(fig: go.Figure, extra: int = 36) -> go.Figure:
    """Heatmaps with the key axis on top: move the figure title above the axis title."""
    top = fig.layout.margin.t if fig.layout.margin.t is not None else 30
    fig.update_layout(margin=dict(t=top + extra), height=(fig.layout.height or 400) + extra,
                      title=dict(y=1.0, yref="container", yanchor="top", pad=dict(t=10), font=dict(size=14)))
    return fig


def mark_exact_zeros(fig: go.Figure, values) -> go.Figure:
    """Write '0' (not '0.00') in cells that are exactly zero, e.g. masked attention weights."""
    tr = fig.data[0]
    if tr.text is None:
        return fig
    z = _np(values)
    tr.text = [[("0" if z[i, j] == 0 else cell) for j, cell in enumerate(row)] for i, row in enumerate(tr.text)]
    return fig


def log_x(value: float) -> float:
    """Annotations on a log axis take log10 coordinates (shapes such as add_vline take data ones)."""
    return math.log10(value)


def bar_figure(labels, values, *, title="", x_title="", y_title="", colors=None, height=320,
               text_fmt="{:.4f}") -> go.Figure:
    vals = _np(values)
    fig = go.Figure(go.Bar(x=[str(v) for v in labels], y=vals, marker_color=colors,
                           text=[text_fmt.format(v) for v in vals], textposition="outside"))
    fig.update_xaxes(title=x_title, type="category")
    fig.update_yaxes(title=y_title, range=[0, max(1e-9, float(vals.max())) * 1.18])
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    return fig


def circle_figure(sin_vals, cos_vals, p: int, k: int, *, title="", pos_label="position",
                  height=420) -> go.Figure:
    """The (sin, cos) pair of every position as a point on the unit circle; position p and p+k
    highlighted with an arrow: shifting by k turns the point by the same angle everywhere."""
    s, c = _np(sin_vals), _np(cos_vals)
    n = len(s)
    fig = go.Figure()
    th = np.linspace(0, 2 * np.pi, 200)
    fig.add_trace(go.Scatter(x=np.sin(th), y=np.cos(th), mode="lines", line=dict(color="#cccccc"),
                             hoverinfo="skip", showlegend=False))
    fig.add_trace(go.Scatter(x=s, y=c, mode="markers", marker=dict(size=6, color=np.arange(n),
                             colorscale="Viridis", colorbar=dict(title=pos_label)),
                             text=[f"{pos_label} {i}" for i in range(n)], hovertemplate="%{text}<extra></extra>",
                             showlegend=False))
    if 0 <= p < n and 0 <= p + k < n:
        for idx, col in ((p, "#1f77b4"), (p + k, "#d62728")):
            fig.add_trace(go.Scatter(x=[0, s[idx]], y=[0, c[idx]], mode="lines+markers+text",
                                     line=dict(color=col, width=3), marker=dict(size=[0, 12], color=col),
                                     text=["", f"{pos_label} {idx}"], textposition="top center",
                                     showlegend=False))
    fig.update_xaxes(title="sin(p·ω)", range=[-1.3, 1.3], zeroline=True)
    fig.update_yaxes(title="cos(p·ω)", range=[-1.3, 1.3], scaleanchor="x", zeroline=True)
    fig.update_layout(title=title, height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10))
    return fig


def series_csv(x_name: str, x, series: dict) -> str:
    """Curves as CSV: one column for x, one per curve."""
    x = _np(x)
    cols = {k: _np(v) for k, v in series.items()}
    esc = lambda s: '"' + str(s).replace('"', '""') + '"'
    lines = [",".join([esc(x_name)] + [esc(k) for k in cols])]
    for i, xv in enumerate(x):
        lines.append(",".join([repr(float(xv))] + [repr(float(v[i])) for v in cols.values()]))
    return "\n".join(lines) + "\n"


def rows_csv(rows: list[dict]) -> str:
    """A list of dicts (a table) as CSV."""
    if not rows:
        return ""
    esc = lambda s: '"' + str(s).replace('"', '""') + '"'
    keys = list(rows[0])
    return "\n".join([",".join(esc(k) for k in keys)] + [",".join(esc(r[k]) for k in keys) for r in rows]) + "\n"


def fmt_num(x: float) -> str:
    """Readable large numbers: 1.2e+12 style beyond a million, commas below."""
    if x == math.inf:
        return "∞"
    if abs(x) >= 1e6:
        return f"{x:.3g}"
    if float(x).is_integer():
        return f"{int(x):,}"
    return f"{x:.3g}"
