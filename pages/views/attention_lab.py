"""Text for the attention and multi-head pages: what the learner types (tokens, matrices) and the
numbers model/ computed, written out as formulas and sentences. No computation and no st.* calls
(the numbers come from model/lessons/lab.py and model/lessons/worked_example.py); words come from the catalogue."""
from __future__ import annotations

import re

from app.format import compact, escape_md, vector
from app.i18n import t
from model.lessons.worked_example import (
    PRINTED_DECIMALS, ChainRow, CellTrace, DotTerms, ExampleReport, SoftmaxTerm, WeightedSum,
)

# the printed matrices' names as they are shown (S′ with a prime, not an apostrophe)
DISPLAY = {"S": "S", "S'": "S′", "A": "A", "O": "O"}
LABEL_LIMIT = 24  # longest token label, in characters
# the stages' names are formulas, the same in every language; only the mask stage has a word
STAGE_FORMULAS = {"raw": "S = QKᵀ", "scaled": "S′ = S / √dₖ", "weights": "A = softmax(S′)", "output": "O = AV"}


def stage_name(stage: str) -> str:
    """The name of a stage (an id of model.lessons.lab.STAGE_IDS) as figure title and button label."""
    return STAGE_FORMULAS.get(stage) or t(f"attention.stage.{stage}.name")


def parse_tokens(text: str) -> list[str]:
    """Comma-separated tokens (also accepts the full-width comma); surrounding spaces removed."""
    return [tok.strip() for tok in re.split(r"[,，]", text or "") if tok.strip()]


def labels_for(tokens: list[str], n: int, prefix: str) -> tuple[list[str], bool]:
    """Token labels for n rows; when the count does not match, numbered labels (and False)."""
    if len(tokens) == n:
        return [tok[:LABEL_LIMIT] for tok in tokens], True
    return [f"{prefix}{i + 1}" for i in range(n)], False


def valid_index(value, size: int) -> int:
    """The index a picker over range(size) labelled "N: ..." or "#N: ..." should show, from whatever
    session state holds. An index in range is kept. When the picker's options changed (rows removed,
    tokens or sentences typed), the browser may still report the label it showed, e.g. "4: q4", and
    Streamlit then hands back that label, a str: its number N is used when still in range. Anything
    else falls back to 0."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value if 0 <= value < size else 0
    if isinstance(value, str):
        number = re.match(r"\s*#?(\d+):", value)
        if number and 1 <= int(number.group(1)) <= size:
            return int(number.group(1)) - 1
    return 0


# ---------------------------------------------------------------- numbers as formulas

def dot_product_text(d: DotTerms, max_terms: int = 8) -> str:
    """'0.1×0.2 + 0.3×0.1 + 0.5×0.3 = 0.02 + 0.03 + 0.15 = 0.2' (long sums are shortened)."""
    tail = f" + … (n = {len(d.a)})" if len(d.a) > max_terms else ""
    factors = " + ".join(f"{compact(x)}×{compact(y)}" for x, y in zip(d.a[:max_terms], d.b[:max_terms])) + tail
    terms = " + ".join(compact(p) for p in d.products[:max_terms]) + tail
    return f"{factors} = {terms} = {compact(d.total)}"


def weighted_sum_text(w: WeightedSum, max_terms: int = 6, max_dims: int = 6) -> str:
    """'0.2953×[0.3, 0.7, 0.5] + … = [0.62, 0.525, 0.495]' for one output row O_i = Σ_j A_ij V_j."""
    parts = [f"{compact(w.weights[j])}×{vector(w.values[j], max_dims)}"
             for j in range(min(len(w.weights), max_terms))]
    if len(w.weights) > max_terms:
        parts.append(f"… (n = {len(w.weights)})")
    return f"{' + '.join(parts)} = {vector(w.output, max_dims)}"


def softmax_text(s: SoftmaxTerm, max_terms: int = 6) -> str:
    """'exp(0.1155) / (exp(0.1155) + exp(0.2656) + exp(0.3176)) = 0.2953' for A_ij (masked keys: −∞)."""
    if s.masked:
        return "exp(−∞) / (…) = 0"
    shown = [f"exp({compact(x)})" for x in s.row[:max_terms]]
    if len(s.row) > max_terms:
        shown.append(f"… (n = {len(s.row)})")
    return f"exp({compact(s.row[s.j])}) / ({' + '.join(shown)}) = {compact(s.weight)}"




def cell_lines(c: CellTrace, q_label: str, k_label: str) -> list[str]:
    """The Markdown lines of the 'where one number comes from' section for cell (i, j)."""
    q, k, i, j = escape_md(q_label), escape_md(k_label), c.i + 1, c.j + 1
    lines = [f"**S[{q}, {k}]** = q{i} · k{j} = `{dot_product_text(c.dot)}`",
             f"**S′** = S ÷ √{c.d_k} = `{compact(c.raw)} ÷ {compact(c.root_dk)} = {compact(c.scaled)}`"]
    if c.softmax.masked:
        lines.append(t("attention.cell.masked", query_no=i, key_no=j))
    lines.append(f"**A[{q}, {k}]** = `{softmax_text(c.softmax)}`")
    lines.append(f"**O[{q}]** = Σⱼ A[{i}, j] × V[j] = `{weighted_sum_text(c.mix)}`")
    return lines


# ---------------------------------------------------------------- the printed example: exercise and chain check

def cell_options(name: str, printed, row_labels: list[str], col_labels: list[str],
                 decimals: int = PRINTED_DECIMALS) -> dict[int, str]:
    """{flat cell index (row * columns + column): 'S[q1, k2] = 0.41'} for picking cells of a printed matrix (rows
    of numbers)."""
    cols = len(printed[0]) if len(printed) else 0
    return {i * cols + j: f"{name}[{row_labels[i]}, {col_labels[j]}] = {float(value):.{decimals}f}"
            for i, row in enumerate(printed) for j, value in enumerate(row)}


def chain_table(rows: list[ChainRow]) -> list[dict]:
    """The chain check as table rows with translated headers and verdicts."""
    return [{
        t("attention.chain.col_stage"): DISPLAY[r.name],
        t("attention.chain.col_source"): t(f"attention.chain.source.{r.stage}"),
        t("attention.chain.col_off"): f"{r.off} / {r.cells}",
        t("attention.chain.col_diff"): r.max_diff,
        t("attention.chain.col_tol"): r.max_tol,
        t("attention.chain.col_verdict"): t("attention.chain.consistent" if r.consistent
                                            else "attention.chain.inconsistent"),
    } for r in rows]


def chain_sentences(rows: list[ChainRow]) -> list[str]:
    """One sentence per printed stage, generated from the computed comparison."""
    return [t("attention.chain.sentence_ok" if r.consistent else "attention.chain.sentence_off",
              name=DISPLAY[r.name], source=t(f"attention.chain.source.{r.stage}"), total=r.cells, off=r.off,
              diff=r.max_diff) for r in rows]


def chain_verdict(report: ExampleReport) -> str:
    """A one-line summary: which printed stages are inconsistent with the stage before."""
    bad = ", ".join(DISPLAY[n] for n, c in report.chain.items() if not c.consistent)
    good = ", ".join(DISPLAY[n] for n, c in report.chain.items() if c.consistent)
    if not bad:
        return t("attention.chain.verdict_all")
    return t("attention.chain.verdict_mixed" if good else "attention.chain.verdict_none", bad=bad, good=good)
