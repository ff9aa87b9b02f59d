"""Pure helpers for the attention and multi-head pages: parse what the learner typed, build the
step figures, write a dot product out term by term, check a printed worked example.

No st.* calls: everything here is testable without a Streamlit run. Bilingual messages are
returned as (en, ko) pairs (or `Problem`s) and the page picks the language."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go

from app.charts import attention_heatmap, matrix_heatmap
from model.lab import StageCheck, Stages, attention_stages, check_printed_chain

MAX_ROWS = 64
MAX_COLS = 64
TEXT_LIMIT = 16  # heatmaps bigger than this hide the numbers in their cells

# The worked example of the Korean article (tokens 나는 / 학교에 / 간다): the inputs it gives ...
EXAMPLE_TOKENS = ["나는", "학교에", "간다"]
EXAMPLE_Q = [[0.1, 0.3, 0.5], [0.4, 0.2, 0.6], [0.7, 0.8, 0.9]]
EXAMPLE_K = [[0.2, 0.1, 0.3], [0.5, 0.7, 0.4], [0.9, 0.2, 0.8]]
EXAMPLE_V = [[0.3, 0.7, 0.5], [0.6, 0.4, 0.8], [0.9, 0.5, 0.2]]
# ... and the four matrices it prints as results (kept exactly as printed, rounded to 2 decimals).
PRINTED = {
    "S": [[0.26, 0.41, 0.65], [0.30, 0.62, 0.85], [0.49, 0.78, 1.20]],
    "S'": [[0.15, 0.24, 0.38], [0.17, 0.36, 0.49], [0.28, 0.45, 0.69]],
    "A": [[0.23, 0.30, 0.47], [0.18, 0.34, 0.48], [0.14, 0.26, 0.60]],
    "O": [[0.63, 0.52, 0.44], [0.58, 0.49, 0.42], [0.53, 0.45, 0.41]],
}
PRINTED_DECIMALS = 2


# ---------------------------------------------------------------- input parsing

@dataclass(frozen=True)
class Problem:
    """Something wrong with the input, said in both languages."""
    en: str
    ko: str
    detail: str | None = None


class InputProblem(ValueError):
    def __init__(self, problem: Problem):
        super().__init__(problem.en)
        self.problem = problem


_SEP = re.compile(r"[\s,;，]+")


def parse_matrix(text: str, name: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> np.ndarray:
    """One row per line, numbers separated by spaces, commas or semicolons. Brackets are ignored,
    so `[[1, 2], [3, 4]]` works too. Raises InputProblem with a message in both languages."""
    text = (text or "").replace("−", "-").replace("\u2212", "-")
    text = re.sub(r"\]\s*,?\s*\[", "\n", text)  # "[1, 2], [3, 4]" -> two lines
    text = text.replace("[", " ").replace("]", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise InputProblem(Problem(f"{name} is empty: type one row per line.",
                                   f"{name}이(가) 비어 있습니다. 한 줄에 한 행씩 입력하세요."))
    if len(lines) > max_rows:
        raise InputProblem(Problem(f"{name} has {len(lines)} rows; at most {max_rows} are allowed here.",
                                   f"{name}의 행이 {len(lines)}개입니다. 여기서는 최대 {max_rows}개까지 됩니다."))
    rows = []
    for i, line in enumerate(lines, start=1):
        cells = [c for c in _SEP.split(line) if c]
        row = []
        for c in cells:
            try:
                x = float(c)
            except ValueError:
                raise InputProblem(Problem(f"{name}, row {i}: '{c}' is not a number.",
                                           f"{name}의 {i}번째 행: '{c}'은(는) 숫자가 아닙니다.")) from None
            if not math.isfinite(x):
                raise InputProblem(Problem(f"{name}, row {i}: '{c}' is not a finite number (NaN and ±∞ are not allowed).",
                                           f"{name}의 {i}번째 행: '{c}'은(는) 유한한 수가 아닙니다 (NaN, ±∞는 쓸 수 없습니다)."))
            row.append(x)
        rows.append(row)
    widths = {len(r) for r in rows}
    if len(widths) > 1:
        w0 = len(rows[0])
        bad = next(i for i, r in enumerate(rows, start=1) if len(r) != w0)
        raise InputProblem(Problem(
            f"{name}: rows have different lengths (row 1 has {w0} numbers, row {bad} has {len(rows[bad - 1])}).",
            f"{name}: 행의 길이가 서로 다릅니다 (1번째 행은 {w0}개, {bad}번째 행은 {len(rows[bad - 1])}개).")
        )
    if widths.pop() > max_cols:
        raise InputProblem(Problem(f"{name} has {len(rows[0])} columns; at most {max_cols} are allowed here.",
                                   f"{name}의 열이 {len(rows[0])}개입니다. 여기서는 최대 {max_cols}개까지 됩니다."))
    return np.asarray(rows, dtype=np.float64)


def matrix_to_text(m) -> str:
    """The inverse of parse_matrix, for filling the text areas."""
    return "\n".join(" ".join(f"{x:g}" for x in row) for row in np.asarray(m, float))


def check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> Problem | None:
    """Q (n, d_k), K (m, d_k), V (m, d_v): the shapes attention needs."""
    if q.shape[1] != k.shape[1]:
        return Problem(f"Q has d_k = {q.shape[1]} columns but K has {k.shape[1]}: a query and a key must have "
                       "the same length to take their dot product.",
                       f"Q의 열은 d_k = {q.shape[1]}개인데 K의 열은 {k.shape[1]}개입니다. 쿼리와 키의 길이가 "
                       "같아야 내적을 구할 수 있습니다.")
    if v.shape[0] != k.shape[0]:
        return Problem(f"V has {v.shape[0]} rows but K has {k.shape[0]}: every key needs exactly one value.",
                       f"V의 행은 {v.shape[0]}개인데 K의 행은 {k.shape[0]}개입니다. 키마다 값이 정확히 하나씩 있어야 합니다.")
    return None


def parse_tokens(text: str) -> list[str]:
    """Comma-separated tokens (also accepts the full-width comma); surrounding spaces removed."""
    return [tok.strip() for tok in re.split(r"[,，]", text or "") if tok.strip()]


def labels_for(tokens: list[str], n: int, prefix: str) -> tuple[list[str], bool]:
    """Token labels for n rows; when the count does not match, numbered labels (and False)."""
    if len(tokens) == n:
        return [t[:24] for t in tokens], True
    return [f"{prefix}{i + 1}" for i in range(n)], False


def safe_stages(q, k, v, causal: bool) -> tuple[Stages | None, Problem | None]:
    """Compute the stages through model/; numbers so big that the dot product overflows give a
    message instead of NaNs."""
    with np.errstate(all="ignore"):
        st = attention_stages(q, k, v, causal=causal)
    finite = (np.isfinite(st.raw).all() and np.isfinite(st.scaled).all() and np.isfinite(st.weights).all()
              and np.isfinite(st.output).all())
    if not finite:
        return None, Problem("The numbers are too large: a dot product or the output overflowed the range of "
                             "64-bit floats (about 1.8e308). Use smaller values.",
                             "숫자가 너무 큽니다. 내적이나 출력이 64비트 실수의 범위(약 1.8e308)를 넘었습니다. "
                             "더 작은 값을 쓰세요.")
    return st, None


# ---------------------------------------------------------------- numbers as text

def fmt(x: float, sig: int = 4) -> str:
    """A compact number: 0.2, 0.1155, 1.51, 1e+30, −∞."""
    x = float(x)
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "−∞" if x < 0 else "∞"
    if x == 0:
        return "0"
    if abs(x) >= 1e5 or abs(x) < 1e-4:
        return f"{x:.3g}"
    s = f"{x:.{sig}g}"
    return s


def fmt_vec(v, max_items: int = 6) -> str:
    v = list(np.asarray(v, float))
    body = ", ".join(fmt(x) for x in v[:max_items])
    return f"[{body}{', …' if len(v) > max_items else ''}]"


def dot_product_text(a, b, max_terms: int = 8) -> str:
    """'0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2' (long sums are shortened)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    prods = a * b
    more = len(a) > max_terms
    tail = f" + … (n = {len(a)})" if more else ""
    factors = " + ".join(f"{fmt(x)}×{fmt(y)}" for x, y in zip(a[:max_terms], b[:max_terms])) + tail
    terms = " + ".join(fmt(p) for p in prods[:max_terms]) + tail
    return f"{factors} = {terms} = {fmt(prods.sum())}"


def weighted_sum_text(weights, values, labels=None, max_terms: int = 6, max_dims: int = 6) -> str:
    """'0.2953×[0.3, 0.7, 0.5] + … = [0.62, 0.525, 0.495]' for one output row O_i = Σ_j A_ij V_j."""
    w, V = np.asarray(weights, float), np.asarray(values, float)
    parts = [f"{fmt(w[j])}×{fmt_vec(V[j], max_dims)}" for j in range(min(len(w), max_terms))]
    if len(w) > max_terms:
        parts.append(f"… (n = {len(w)})")
    return f"{' + '.join(parts)} = {fmt_vec(w @ V, max_dims)}"


def softmax_text(row, j: int, max_terms: int = 6) -> str:
    """'exp(0.1155) / (exp(0.1155) + exp(0.2656) + exp(0.3176)) = 0.2953' for A_ij (masked keys: −∞)."""
    row = np.asarray(row, float)
    keep = np.isfinite(row)
    if not keep[j]:
        return "exp(−∞) / (…) = 0"
    shown = [f"exp({fmt(s)})" for s in row[:max_terms]]
    if len(row) > max_terms:
        shown.append(f"… (n = {len(row)})")
    m = row[keep].max()
    p = np.exp(row[j] - m) / np.exp(row[keep] - m).sum()
    return f"exp({fmt(row[j])}) / ({' + '.join(shown)}) = {fmt(p)}"


# ---------------------------------------------------------------- stage figures

# (id, English name, Korean name, English caption, Korean caption)
STAGES = [
    ("raw", "S = QKᵀ", "S = QKᵀ",
     "Each cell is the dot product of one query row with one key row: how well they match.",
     "각 칸은 쿼리 한 행과 키 한 행의 내적입니다. 둘이 얼마나 잘 맞는지를 나타냅니다."),
    ("scaled", "S′ = S / √dₖ", "S′ = S / √dₖ",
     "Every score divided by √dₖ, so the scores keep about unit size whatever dₖ is.",
     "모든 점수를 √dₖ로 나눕니다. 그래서 dₖ가 얼마이든 점수의 크기가 대략 1 정도로 유지됩니다."),
    ("masked", "mask (−∞)", "마스크 (−∞)",
     "A causal mask sets the scores of later keys to −∞, so softmax gives them exactly 0.",
     "인과 마스크는 뒤쪽 키의 점수를 −∞로 바꿉니다. 그러면 소프트맥스가 그 칸에 정확히 0을 줍니다."),
    ("weights", "A = softmax(S′)", "A = softmax(S′)",
     "Softmax along each row: positive weights that sum to 1 for every query.",
     "행마다 소프트맥스를 취합니다. 쿼리마다 합이 1인 양수 가중치가 됩니다."),
    ("output", "O = AV", "O = AV",
     "Each output row is the mix of value rows, weighted by that query's row of A.",
     "출력의 각 행은 그 쿼리의 A 행을 가중치로 삼아 값(V) 행들을 섞은 것입니다."),
]
STAGE_IDS = [s[0] for s in STAGES]


def _retext(fig: go.Figure, z: np.ndarray, decimals: int, show_text: bool) -> go.Figure:
    """matrix_heatmap writes f'{v:.2f}'; huge values (1e30) would print 30 digits. Rewrite the cell
    text compactly and make the hover value readable at any size."""
    if show_text:
        text = [[(f"{v:.{decimals}f}" if np.isfinite(v) and abs(v) < 1e4 else fmt(v)) for v in row] for row in z]
        fig.data[0].text = text
    fig.data[0].hovertemplate = fig.data[0].hovertemplate.replace("%{z:.4f}", "%{z:.4g}")
    return fig


def _title_room(fig: go.Figure) -> go.Figure:
    """Keep the figure title clear of the key labels on the top axis."""
    if fig.layout.title.text:
        fig.update_layout(title=dict(y=0.995, yanchor="top", x=0.0, xanchor="left", font=dict(size=15)),
                          margin=dict(t=95))
    return fig


def heatmap_height(n_rows: int) -> int:
    return max(240, 46 * n_rows + 150) if n_rows <= TEXT_LIMIT else min(900, 12 * n_rows + 220)


def stage_figure(stage: str, values, query_labels, key_labels, *, title: str, query_title: str = "query",
                 key_title: str = "key", dim_title: str = "dimension", highlight=None, decimals: int = 2) -> go.Figure:
    """One stage as a labelled heatmap. Rows are queries; columns are keys (value dimensions for O).
    Attention weights use the shared 0..1 scale."""
    z = np.asarray(values, float)
    show_text = max(z.shape) <= TEXT_LIMIT
    height = heatmap_height(z.shape[0])
    if stage == "weights":
        fig = attention_heatmap(z, query_labels, key_labels, title=title, query_title=query_title,
                                key_title=key_title, show_text=show_text, height=height)
        if highlight is not None:
            _outline(fig, highlight)
        return _title_room(_retext(fig, z, decimals, show_text))
    cols = key_labels if stage != "output" else [f"{j + 1}" for j in range(z.shape[1])]
    x_title = f"{key_title} →" if stage != "output" else f"{dim_title} →"
    finite = z[np.isfinite(z)]
    zmax = float(np.abs(finite).max()) if finite.size else 1.0
    fig = matrix_heatmap(z, cols, query_labels, title=title, x_title=x_title, y_title=f"{query_title} ↓",
                         zmin=-zmax if stage != "output" else None, zmax=zmax if stage != "output" else None,
                         zmid=0 if stage != "output" else None, colorscale="RdBu", reversescale=True,
                         decimals=decimals, show_text=show_text, height=height, highlight=highlight)
    return _title_room(_retext(fig, z, decimals, show_text))


def _outline(fig: go.Figure, highlight) -> None:
    hl = np.asarray(highlight, dtype=bool)
    for i, j in zip(*np.nonzero(hl)):
        fig.add_shape(type="rect", x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5,
                      line=dict(color="#d62728", width=3), xref="x", yref="y")


def stage_values(st: Stages, stage: str) -> np.ndarray:
    return {"raw": st.raw, "scaled": st.scaled, "masked": st.masked, "weights": st.weights,
            "output": st.output}[stage]


def visible_stages(causal: bool) -> list[str]:
    return [s for s in STAGE_IDS if causal or s != "masked"]


# ---------------------------------------------------------------- checking the printed example

@dataclass
class ExampleReport:
    computed: dict[str, np.ndarray]  # from the printed Q, K, V, full precision
    rounded: dict[str, np.ndarray]  # the same, rounded like the print
    differs: dict[str, np.ndarray]  # bool: printed cell != computed cell (after rounding)
    chain: dict[str, StageCheck]  # does each printed stage follow from the printed stage before?


def example_report(q=EXAMPLE_Q, k=EXAMPLE_K, v=EXAMPLE_V, printed=PRINTED, decimals=PRINTED_DECIMALS) -> ExampleReport:
    st = attention_stages(q, k, v)
    computed = {"S": st.raw, "S'": st.scaled, "A": st.weights, "O": st.output}
    rounded = {n: np.round(m, decimals) for n, m in computed.items()}
    differs = {n: np.abs(rounded[n] - np.asarray(printed[n], float)) > 1e-9 for n in computed}
    chain = check_printed_chain(q, k, v, printed["S"], printed["S'"], printed["A"], printed["O"], decimals)
    return ExampleReport(computed, rounded, differs, chain)


# what each printed stage is recomputed from, in both languages
CHAIN_SOURCES = {
    "S": ("Q Kᵀ from the printed Q and K", "인쇄된 Q와 K로 구한 Q Kᵀ"),
    "S'": ("printed S ÷ √dₖ", "인쇄된 S ÷ √dₖ"),
    "A": ("softmax of the printed S′", "인쇄된 S′의 소프트맥스"),
    "O": ("printed A × V", "인쇄된 A × V"),
}


def cell_names(mask: np.ndarray, row_labels, col_labels=None, limit: int = 9) -> str:
    idx = list(zip(*np.nonzero(mask)))
    names = [f"({row_labels[i]}, {col_labels[j] if col_labels else j + 1})" for i, j in idx[:limit]]
    return ", ".join(names) + (" …" if len(idx) > limit else "")


DISPLAY = {"S": "S", "S'": "S′", "A": "A", "O": "O"}


def chain_sentences(report: ExampleReport) -> list[tuple[str, str]]:
    """One sentence per printed stage, generated from the computed comparison."""
    out = []
    for name, check in report.chain.items():
        src_en, src_ko = CHAIN_SOURCES[name]
        shown, total, diff = DISPLAY[name], check.off.size, f"{check.max_abs_diff:.4f}"
        if check.consistent:
            out.append((f"Printed **{shown}** against {src_en}: all {total} cells agree within rounding "
                        f"(largest difference {diff}) — **consistent**.",
                        f"인쇄된 **{shown}** ↔ {src_ko}: {total}칸 모두 반올림 오차 안에서 일치합니다 "
                        f"(가장 큰 차이 {diff}) — **일치**."))
        else:
            out.append((f"Printed **{shown}** against {src_en}: {check.n_off} of {total} cells are off by more "
                        f"than rounding allows (largest difference {diff}) — **inconsistent**.",
                        f"인쇄된 **{shown}** ↔ {src_ko}: {total}칸 중 {check.n_off}칸이 반올림으로 설명되는 "
                        f"범위를 넘어 다릅니다 (가장 큰 차이 {diff}) — **불일치**."))
    return out


def chain_verdict(report: ExampleReport) -> tuple[str, str]:
    """A one-line summary: which printed stages are inconsistent with the stage before."""
    bad = [n for n, c in report.chain.items() if not c.consistent]
    good = [n for n, c in report.chain.items() if c.consistent]
    if not bad:
        return ("Every printed stage follows from the one before it.",
                "인쇄된 모든 단계가 바로 앞 단계에서 제대로 나옵니다.")
    b, g = ", ".join(DISPLAY[n] for n in bad), ", ".join(DISPLAY[n] for n in good)
    en = f"Inconsistent with the stage before: {b}."
    ko = f"앞 단계와 맞지 않는 인쇄값: {b}."
    if good:
        en += f" Consistent: {g}."
        ko += f" 앞 단계와 맞는 인쇄값: {g}."
    return en, ko


def chain_rows(report: ExampleReport) -> list[dict]:
    """The chain check as table rows (language-neutral keys; the page translates the headers)."""
    rows = []
    for name, c in report.chain.items():
        rows.append({"stage": DISPLAY[name], "source": CHAIN_SOURCES[name], "off": c.n_off, "cells": c.off.size,
                     "max_diff": round(c.max_abs_diff, 4), "max_tol": round(float(c.tolerance.max()), 4),
                     "consistent": c.consistent})
    return rows
