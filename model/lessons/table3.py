"""The paper's Table 3 (variations on the base model, EN-DE development set newstest2013) and the
miniature of each row that this project trains (`model.training.study`).

Every row of the paper changes the base model in one or two places: (A) the number of heads at equal
cost (d_k = d_v = d_model / h), (B) the key size d_k alone, (C) depth, width and d_ff, (D) dropout and
label smoothing, (E) learned positions instead of sinusoids. A row here is those changes as
TransformerConfig fields, so the same row can be applied to the paper's base model (to count its
parameters) and to the miniature base (to train it)."""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from model.nn.config import PRESETS, TransformerConfig


@dataclass(frozen=True)
class PaperRow:
    """One line of Table 3: its group, what it changes, and the paper's numbers (None where the paper
    prints nothing: the parameter count of rows A, D and E is the base model's)."""
    key: str
    group: str                      # "base", "A", "B", "C", "D", "E", "big"
    changes: dict = field(default_factory=dict)  # TransformerConfig fields changed from the base model
    perplexity: float | None = None  # dev perplexity, per wordpiece
    bleu: float | None = None        # dev BLEU
    params_m: float | None = None    # parameters x 10^6 as printed

    @property
    def label(self) -> str:
        """The changed values in the paper's column names, e.g. "h=4, d_k=d_v=128"."""
        names = {"n_heads": "h", "d_k": "d_k", "d_v": "d_v", "n_encoder_layers": "N", "d_model": "d_model",
                 "d_ff": "d_ff", "dropout": "P_drop", "label_smoothing": "ε_ls", "positional": "positions"}
        parts, ch = [], dict(self.changes)
        ch.pop("n_decoder_layers", None)
        if "d_k" in ch and ch.get("d_v") == ch["d_k"]:
            parts_kv = f"d_k=d_v={ch.pop('d_k')}"
            ch.pop("d_v")
        else:
            parts_kv = None
        for k, v in ch.items():
            parts.append(f"{names.get(k, k)}={v}")
        if parts_kv:
            parts.append(parts_kv)
        return ", ".join(parts) if parts else self.key


def _row(key, group, changes, ppl, bleu, params=None) -> PaperRow:
    return PaperRow(key, group, changes, ppl, bleu, params)


def _depth(n: int) -> dict:
    return {"n_encoder_layers": n, "n_decoder_layers": n}


# Table 3 of the paper, transcribed: N, d_model, d_ff, h, d_k, d_v, P_drop, ε_ls changed from the base row.
PAPER_TABLE3: tuple[PaperRow, ...] = (
    _row("base", "base", {}, 4.92, 25.8, 65),
    _row("A-h1", "A", {"n_heads": 1, "d_k": 512, "d_v": 512}, 5.29, 24.9),
    _row("A-h4", "A", {"n_heads": 4, "d_k": 128, "d_v": 128}, 5.00, 25.5),
    _row("A-h16", "A", {"n_heads": 16, "d_k": 32, "d_v": 32}, 4.91, 25.8),
    _row("A-h32", "A", {"n_heads": 32, "d_k": 16, "d_v": 16}, 5.01, 25.4),
    _row("B-dk16", "B", {"d_k": 16}, 5.16, 25.1, 58),
    _row("B-dk32", "B", {"d_k": 32}, 5.01, 25.4, 60),
    _row("C-N2", "C", _depth(2), 6.11, 23.7, 36),
    _row("C-N4", "C", _depth(4), 5.19, 25.3, 50),
    _row("C-N8", "C", _depth(8), 4.88, 25.5, 80),
    _row("C-d256", "C", {"d_model": 256, "d_k": 32, "d_v": 32}, 5.75, 24.5, 28),
    _row("C-d1024", "C", {"d_model": 1024, "d_k": 128, "d_v": 128}, 4.66, 26.0, 168),
    _row("C-ff1024", "C", {"d_ff": 1024}, 5.12, 25.4, 53),
    _row("C-ff4096", "C", {"d_ff": 4096}, 4.75, 26.2, 90),
    _row("D-drop0", "D", {"dropout": 0.0}, 5.77, 24.6),
    _row("D-drop0.2", "D", {"dropout": 0.2}, 4.95, 25.5),
    _row("D-ls0", "D", {"label_smoothing": 0.0}, 4.67, 25.3),
    _row("D-ls0.2", "D", {"label_smoothing": 0.2}, 5.47, 25.7),
    _row("E-learned", "E", {"positional": "learned"}, 4.92, 25.7),
    _row("big", "big", {"d_model": 1024, "d_ff": 4096, "n_heads": 16, "dropout": 0.3}, 4.33, 26.4, 213),
)
GROUPS = ("base", "A", "B", "C", "D", "E", "big")


def paper_row(key: str) -> PaperRow:
    for row in PAPER_TABLE3:
        if row.key == key:
            return row
    raise KeyError(key)


def paper_config(row: PaperRow) -> TransformerConfig:
    """The row's model at the paper's sizes (37,000-token shared vocabulary, tied embeddings)."""
    return PRESETS["paper_base"].replace(**row.changes)


def paper_parameter_counts() -> list[dict]:
    """Every row: parameters counted by instantiating our Transformer on the meta device, beside the
    paper's printed count (rows A, D, E print none: they are the base model's size, or nearly)."""
    from model.nn.transformer import count_parameters
    out = []
    for row in PAPER_TABLE3:
        counted = count_parameters(paper_config(row))
        paper = row.params_m if row.params_m is not None else None
        out.append({"key": row.key, "group": row.group, "label": row.label, "counted": counted,
                    "paper_m": paper,
                    "difference": (counted / 1e6 - paper) / paper if paper else None})
    return out


# ----------------------------------------------------------------------------- the miniature
# The miniature base halves depth and heads and divides the width by 8: N=3, d_model=64, h=4,
# d_k=d_v=16, d_ff=256 (d_ff = 4 d_model, as in the paper). Each row scales its change the same way:
# heads x1/2 (one head stays one), d_k in proportion to the base's d_k, depth x1/2, width /8.
MINI_BASE = TransformerConfig(
    vocab_size=2000, d_model=64, n_heads=4, d_ff=256, n_encoder_layers=3, n_decoder_layers=3,
    dropout=0.1, label_smoothing=0.1, max_len=64,
)
MINI_CHANGES: dict[str, dict] = {
    "base": {},
    "A-h1": {"n_heads": 1, "d_k": 64, "d_v": 64},
    "A-h4": {"n_heads": 2, "d_k": 32, "d_v": 32},
    "A-h16": {"n_heads": 8, "d_k": 8, "d_v": 8},
    "A-h32": {"n_heads": 16, "d_k": 4, "d_v": 4},
    "B-dk16": {"d_k": 4},
    "B-dk32": {"d_k": 8},
    "C-N2": _depth(1),
    "C-N4": _depth(2),
    "C-N8": _depth(4),
    "C-d256": {"d_model": 32, "d_k": 8, "d_v": 8},  # d_ff stays the base's, as in the paper's row
    "C-d1024": {"d_model": 128, "d_k": 32, "d_v": 32},
    "C-ff1024": {"d_ff": 128},
    "C-ff4096": {"d_ff": 512},
    "D-drop0": {"dropout": 0.0},
    "D-drop0.2": {"dropout": 0.2},
    "D-ls0": {"label_smoothing": 0.0},
    "D-ls0.2": {"label_smoothing": 0.2},
    "E-learned": {"positional": "learned"},
}
STUDY_ROWS = tuple(MINI_CHANGES)  # the paper's rows in its order; "big" is left out (its point is size)


def mini_config(key: str, vocab_size: int | None = None, base: TransformerConfig = MINI_BASE) -> TransformerConfig:
    """The miniature of row `key` (KeyError for an unknown row)."""
    cfg = base.replace(**MINI_CHANGES[key])
    return cfg.replace(vocab_size=vocab_size) if vocab_size is not None else cfg


# ----------------------------------------------------------------------------- our rows against the paper's conclusions
# A study document (model.training.study's table3.json) holds per row the values over seeds of each metric
# with their mean, median and std.


def mean(row: dict, metric: str):
    v = (row.get(metric) or {}).get("mean")
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def centre(row: dict, metric: str):
    """The median over seeds (a table written before medians were kept: the mean)."""
    stats = row.get(metric) or {}
    v = stats.get("median", stats.get("mean"))
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None



# the paper's conclusions
@dataclass(frozen=True)
class Claim:
    key: str           # catalogue key study.claims.<key>
    worse: str         # the row the paper finds worse (higher perplexity) ...
    better: str        # ... than this one; for kind "same", the two rows it finds alike
    kind: str = "worse"


# Section 6.2 of the paper, read off Table 3 by dev perplexity.
CLAIMS = (
    Claim("one_head", "A-h1", "base"),
    Claim("many_heads", "A-h32", "A-h16"),
    Claim("small_keys", "B-dk16", "base"),
    Claim("deeper", "C-N2", "C-N8"),
    Claim("wider", "C-d256", "C-d1024"),
    Claim("bigger_ffn", "C-ff1024", "C-ff4096"),
    Claim("dropout", "D-drop0", "base"),
    Claim("smoothing_perplexity", "base", "D-ls0"),
    Claim("learned_positions", "E-learned", "base", "same"),
)
ALPHA = 0.05  # a separation this likely by chance is no verdict: 3 seeds against 3 separate by chance 10 % of the time


@dataclass
class Verdict:
    claim: Claim
    paper: tuple[float, float]
    ours: tuple[float, float] | None    # (median of `worse`, median of `better`)
    ranges: tuple[tuple[float, float], tuple[float, float]] | None  # (lowest, highest seed) of each row
    seeds: tuple[int, int]              # seeds of `worse`, of `better`
    outcome: str                        # "reproduced", "contradicted", "unclear", "missing"
    p_value: float | None = None        # chance of a separation this complete when the rows do not differ

    @property
    def difference(self) -> float | None:
        """Our medians' difference relative to `better`'s median (0.1 = worse by 10 %)."""
        return None if self.ours is None else (self.ours[0] - self.ours[1]) / self.ours[1]


def separation_p_value(n: int, m: int) -> float:
    """Two-sided Mann-Whitney probability that n seeds of one row and m of another separate completely (every
    seed of one beyond every seed of the other) when both come from the same distribution: 2 / C(n+m, n)."""
    return min(1.0, 2.0 / math.comb(n + m, n))


def seed_values(row: dict | None, metric: str) -> list[float]:
    """The row's finite per-seed values of `metric`."""
    values = ((row or {}).get(metric) or {}).get("values") or []
    return [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v)]


def verdicts(doc: dict, metric: str = "perplexity") -> list[Verdict]:
    """Each conclusion of the paper against our rows, by their seeds' ranges (stated on the page):
    reproduced when every seed of the row the paper finds worse is worse than every seed of the other;
    contradicted when every seed says the opposite; unclear whenever the two ranges overlap, or when so few
    seeds separate by chance more often than ALPHA (fewer than 4 against 4). A claim that two rows are alike ("same") can be contradicted (the ranges
    separate) but never reproduced: seeds that overlap show no difference was found, not that none exists."""
    rows = {r["row"]: r for r in doc["rows"]}
    out = []
    for c in CLAIMS:
        paper = (paper_row(c.worse).perplexity, paper_row(c.better).perplexity)
        a, b = seed_values(rows.get(c.worse), metric), seed_values(rows.get(c.better), metric)
        if not a or not b:
            out.append(Verdict(c, paper, None, None, (len(a), len(b)), "missing"))
            continue
        ours = (statistics.median(a), statistics.median(b))
        ranges = ((min(a), max(a)), (min(b), max(b)))
        result, p = outcome(a, b, c.kind)
        out.append(Verdict(c, paper, ours, ranges, (len(a), len(b)), result, p))
    return out


def outcome(a: list[float], b: list[float], kind: str = "worse") -> tuple[str, float | None]:
    """The rule of `verdicts` for one claim: `a` the seeds of what is claimed worse (higher), `b` of what is
    claimed better; kind "same" claims they are alike. Returns the outcome and the chance of the separation
    (None when the seeds overlap)."""
    worse_apart, better_apart = min(a) > max(b), max(a) < min(b)
    p = separation_p_value(len(a), len(b)) if worse_apart or better_apart else None
    if p is not None and p > ALPHA:
        return "unclear", p
    if kind == "same":
        return ("contradicted" if p is not None else "unclear"), p
    if worse_apart:
        return "reproduced", p
    return ("contradicted" if better_apart else "unclear"), p


# Dev perplexity above this: the run has not learned to line up source and target words. On the loss plateau
# a run sits at 5-10 (it knows which Korean pieces are likely, not where they go); a run that has left it falls
# below 1.5 within a few hundred steps, so any threshold between the two tells them apart.
PLATEAU = 2.0


def plateau_runs(doc: dict) -> dict:
    """How many finished runs ended above PLATEAU dev perplexity, in how many rows, and the highest dev
    perplexity of any run (None when no run finished)."""
    runs = stuck = 0
    rows, worst = set(), None
    for r in doc["rows"]:
        for v in seed_values(r, "perplexity"):
            runs += 1
            worst = v if worst is None else max(worst, v)
            if v > PLATEAU:
                stuck += 1
                rows.add(r["row"])
    return {"runs": runs, "stuck": stuck, "rows": len(rows), "worst": worst}
