"""The worked examples of the attention page.

- The learner's own Q, K, V: typed as text, parsed and checked (bad input raises `UserError`),
  run through every stage (model.lessons.lab.attention_stages), and one cell traced term by term.
- The example printed in a Korean blog post (its title is EXAMPLE_SOURCE, its three tokens are
  EXAMPLE_TOKENS): recomputed from its Q, K, V, each printed stage checked against the printed stage
  just before it, and the learner's guesses of its wrong cells scored (score_guess).

Plain numpy and PyTorch, no streamlit; numbers come out as numbers (the app writes the text)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from model.lessons.lab import StageCheck, Stages, attention_stages, check_printed_chain, checked_stages
from model.messages import UserError

MAX_ROWS = 64
MAX_COLS = 64

# The worked example of a Korean blog post (a review of the paper, in several parts), by its title ...
EXAMPLE_SOURCE = "[딥러닝, 논문리뷰] Attention Is All You Need 2 - Attention Mechanism"
# ... the inputs it gives ...
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
PRINTED_STAGE = {"S": "raw", "S'": "scaled", "A": "weights", "O": "output"}  # the stage id of each


def half_unit(decimals: int = PRINTED_DECIMALS) -> float:
    """How far a number printed with `decimals` decimals may be from the true one: half a unit of
    the last digit (0.005 for 2 decimals)."""
    return 0.5 * 10.0 ** -decimals


# ---------------------------------------------------------------- the learner's input

_SEP = re.compile(r"[\s,;，]+")


def parse_matrix(text: str, name: str, max_rows: int = MAX_ROWS, max_cols: int = MAX_COLS) -> np.ndarray:
    """One row per line, numbers separated by spaces, commas or semicolons. Brackets are ignored,
    so `[[1, 2], [3, 4]]` works too. Bad input raises a UserError with an attention.errors code."""
    text = (text or "").replace("\u2212", "-")  # the minus sign − as typed in articles
    text = re.sub(r"\]\s*,?\s*\[", "\n", text)  # "[1, 2], [3, 4]" -> two lines
    text = text.replace("[", " ").replace("]", " ")
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise UserError("attention.errors.empty", name=name)
    if len(lines) > max_rows:
        raise UserError("attention.errors.too_many_rows", name=name, rows=len(lines), limit=max_rows)
    rows = []
    for i, line in enumerate(lines, start=1):
        row = []
        for cell in (c for c in _SEP.split(line) if c):
            try:
                x = float(cell)
            except ValueError:
                raise UserError("attention.errors.not_a_number", name=name, row=i, cell=cell) from None
            if not math.isfinite(x):
                raise UserError("attention.errors.not_finite", name=name, row=i, cell=cell)
            row.append(x)
        rows.append(row)
    w0 = len(rows[0])
    if not any(rows):  # only separators, e.g. ", ,"
        raise UserError("attention.errors.empty", name=name)
    bad = next((i for i, r in enumerate(rows, start=1) if len(r) != w0), None)
    if bad is not None:
        raise UserError("attention.errors.ragged", name=name, width=w0, row=bad, row_width=len(rows[bad - 1]))
    if w0 > max_cols:
        raise UserError("attention.errors.too_many_cols", name=name, cols=w0, limit=max_cols)
    return np.asarray(rows, dtype=np.float64)


def matrix_text(m) -> str:
    """A matrix as parse_matrix reads it (one row per line, numbers separated by spaces): its inverse, for
    filling a text area."""
    return "\n".join(" ".join(f"{x:g}" for x in row) for row in np.asarray(m, float))


def check_shapes(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> None:
    """Q (n, d_k), K (m, d_k), V (m, d_v): the shapes attention needs, else UserError."""
    if q.shape[1] != k.shape[1]:
        raise UserError("attention.errors.d_k", d_q=q.shape[1], d_k=k.shape[1])
    if v.shape[0] != k.shape[0]:
        raise UserError("attention.errors.values", v_rows=v.shape[0], k_rows=k.shape[0])


@dataclass
class Worked:
    """The learner's Q, K, V and every stage computed from them."""
    q: np.ndarray  # (n, d_k)
    k: np.ndarray  # (m, d_k)
    v: np.ndarray  # (m, d_v)
    stages: Stages
    causal: bool

    @property
    def n(self) -> int:
        return self.q.shape[0]

    @property
    def m(self) -> int:
        return self.k.shape[0]

    @property
    def d_k(self) -> int:
        return self.q.shape[1]

    @property
    def d_v(self) -> int:
        return self.v.shape[1]


def worked_from_text(q_text: str, k_text: str, v_text: str, causal: bool = False) -> Worked:
    """Parse, check and compute; any problem raises UserError (the first one found)."""
    q, k, v = parse_matrix(q_text, "Q"), parse_matrix(k_text, "K"), parse_matrix(v_text, "V")
    check_shapes(q, k, v)
    return Worked(q, k, v, checked_stages(q, k, v, causal), causal)


# ---------------------------------------------------------------- one cell, term by term

@dataclass
class DotTerms:
    """a · b with every product: a_1 b_1 + a_2 b_2 + ... = total."""
    a: np.ndarray
    b: np.ndarray
    products: np.ndarray
    total: float


def dot_terms(a, b) -> DotTerms:
    a, b = np.asarray(a, float), np.asarray(b, float)
    products = a * b
    return DotTerms(a, b, products, float(products.sum()))


@dataclass
class SoftmaxTerm:
    """A_ij = exp(s_ij) / Σ_k exp(s_ik) over the row s_i (masked keys are −∞ and get 0)."""
    row: np.ndarray
    j: int
    weight: float

    @property
    def masked(self) -> bool:
        return not bool(np.isfinite(self.row[self.j]))


def softmax_term(row, j: int) -> SoftmaxTerm:
    row = np.asarray(row, float)
    keep = np.isfinite(row)
    if not keep[j]:
        return SoftmaxTerm(row, j, 0.0)
    top = row[keep].max()
    return SoftmaxTerm(row, j, float(np.exp(row[j] - top) / np.exp(row[keep] - top).sum()))


@dataclass
class WeightedSum:
    """O_i = Σ_j A_ij V_j."""
    weights: np.ndarray  # (m,)
    values: np.ndarray  # (m, d_v)
    output: np.ndarray  # (d_v,)


def weighted_sum(weights, values) -> WeightedSum:
    w, v = np.asarray(weights, float), np.asarray(values, float)
    return WeightedSum(w, v, w @ v)


@dataclass
class CellTrace:
    """Where S[i, j], S′[i, j], A[i, j] and O[i] come from."""
    i: int
    j: int
    dot: DotTerms  # q_i · k_j = S[i, j]
    raw: float
    d_k: int
    root_dk: float
    scaled: float  # S[i, j] / √d_k
    softmax: SoftmaxTerm  # A[i, j] from the (masked) row of S′
    mix: WeightedSum  # O[i] from row i of A and V


def cell_trace(w: Worked, i: int, j: int) -> CellTrace:
    st = w.stages
    row = st.masked[i] if st.masked is not None else st.scaled[i]
    return CellTrace(i, j, dot_terms(w.q[i], w.k[j]), float(st.raw[i, j]), w.d_k, math.sqrt(w.d_k),
                     float(st.scaled[i, j]), softmax_term(row, j), weighted_sum(st.weights[i], w.v))


# ---------------------------------------------------------------- checking the printed example

@dataclass
class ExampleReport:
    printed: dict[str, np.ndarray]  # as printed
    computed: dict[str, np.ndarray]  # from the printed Q, K, V, full precision
    rounded: dict[str, np.ndarray]  # the same, rounded like the print
    differs: dict[str, np.ndarray]  # bool: printed cell != computed cell (after rounding)
    chain: dict[str, StageCheck]  # does each printed stage follow from the printed stage before?

    def n_diff(self, name: str) -> int:
        return int(self.differs[name].sum())

    @property
    def consistent(self) -> bool:
        return all(c.consistent for c in self.chain.values())


def example_report(q=EXAMPLE_Q, k=EXAMPLE_K, v=EXAMPLE_V, printed=PRINTED, decimals=PRINTED_DECIMALS) -> ExampleReport:
    st = attention_stages(q, k, v)
    printed = {n: np.asarray(printed[n], float) for n in PRINTED_STAGE}
    computed = {n: st.stage(stage) for n, stage in PRINTED_STAGE.items()}
    rounded = {n: np.round(m, decimals) for n, m in computed.items()}
    differs = {n: np.abs(rounded[n] - printed[n]) > 1e-9 for n in computed}
    chain = check_printed_chain(q, k, v, printed["S"], printed["S'"], printed["A"], printed["O"], decimals)
    return ExampleReport(printed, computed, rounded, differs, chain)


@dataclass
class ChainRow:
    """One printed stage of the chain check, in numbers (the app writes the words)."""
    name: str  # "S", "S'", "A", "O"
    stage: str  # its stage id: what it is recomputed from depends on it
    off: int  # cells off by more than rounding allows
    cells: int
    max_diff: float
    max_tol: float
    consistent: bool


def chain_rows(report: ExampleReport, decimals: int = 4) -> list[ChainRow]:
    return [ChainRow(name, PRINTED_STAGE[name], c.n_off, int(c.off.size), round(c.max_abs_diff, decimals),
                     round(float(c.tolerance.max()), decimals), c.consistent)
            for name, c in report.chain.items()]


# ---------------------------------------------------------------- the exercise: find the wrong cells

@dataclass
class GuessScore:
    """The learner's picks of wrong cells in one printed matrix, against the cells that are wrong."""
    found: int  # wrong cells the learner picked
    missed: int  # wrong cells not picked
    false_alarms: int  # picked cells that are right
    wrong: int  # wrong cells in all
    cells: int  # cells in the matrix

    @property
    def perfect(self) -> bool:
        return self.missed == 0 and self.false_alarms == 0


def score_guess(wrong, picked) -> GuessScore:
    """wrong: bool matrix (a printed cell differs from the recomputed one); picked: flat cell indices
    (row * columns + column). Out-of-range and repeated picks are ignored."""
    wrong = np.asarray(wrong, dtype=bool)
    flat = wrong.ravel()
    chosen = {int(i) for i in picked if 0 <= int(i) < flat.size}
    found = sum(1 for i in chosen if flat[i])
    total = int(flat.sum())
    return GuessScore(found, total - found, len(chosen) - found, total, int(flat.size))
