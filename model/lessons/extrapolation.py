"""The paper's last two limits, read off studies trained here: lengths never seen (assets/study/lengths.json,
model/training/lengths.py) and scale (the size rows of the Table 3 study, assets/study/table3.json).

Verdicts use the Table 3 study's rule (model.lessons.table3.outcome): a claim is reproduced when every seed
says so, contradicted when every seed says the opposite, unclear when the seeds overlap or when so complete a
separation happens by chance more often than 5 % of the time."""
from __future__ import annotations

import math
from dataclasses import dataclass

from model.lessons.table3 import outcome

# The size rows of Table 3: the base and every row of group C (depth, width, feed-forward size).
SIZE_ROWS = ("base", "C-N2", "C-N4", "C-N8", "C-d256", "C-d1024", "C-ff1024", "C-ff4096")
# Kaplan et al. (2020), "Scaling laws for neural language models": L(N) = (N_c / N)^alpha_N with alpha_N about
# 0.076, fitted on models from about 10^3 to 10^9 non-embedding parameters (six orders of magnitude and more).
KAPLAN_ALPHA = 0.076
KAPLAN_DECADES = 6


@dataclass(frozen=True)
class LengthClaim:
    key: str        # catalogue key limits.claims.<key>
    worse: tuple    # (scheme, multiple): the accuracy claimed lower ...
    better: tuple   # ... than this one; kind "same": claimed alike
    kind: str = "worse"


# The paper's hypothesis (section 3.5), then what RoPE and ALiBi were proposed for, at twice the training length.
LENGTH_CLAIMS = (
    LengthClaim("sinusoidal_keeps", ("sinusoidal", 2), ("sinusoidal", 1), "same"),
    LengthClaim("sinusoidal_beats_chance", ("chance", 2), ("sinusoidal", 2)),
    LengthClaim("rotary_beats_sinusoidal", ("sinusoidal", 2), ("rotary", 2)),
    LengthClaim("alibi_beats_sinusoidal", ("sinusoidal", 2), ("alibi", 2)),
)


def accuracies(doc: dict, scheme: str, multiple: int) -> list[float]:
    """Per-seed accuracy of `scheme` on strings `multiple` times the training length ([] where refused);
    ("chance", m): the chance level once per seed of the study, so the rule compares it like a row."""
    if scheme == "chance":
        return [float(doc["chance"])] * max((r["seeds"] for r in doc["rows"]), default=0)
    row = next((r for r in doc["rows"] if r["scheme"] == scheme), None)
    cell = (row or {}).get("accuracy", {}).get(str(multiple)) or {}
    return [float(v) for v in cell.get("values") or [] if isinstance(v, (int, float)) and math.isfinite(v)]


def length_verdicts(doc: dict) -> list[dict]:
    """Each claim against the seeds: accuracies turned into errors (1 - accuracy) so "worse" is higher, as for
    perplexity in Table 3. Missing (refused or not run) cells give outcome "missing"."""
    out = []
    for c in LENGTH_CLAIMS:
        a, b = accuracies(doc, *c.worse), accuracies(doc, *c.better)
        if not a or not b:
            out.append({"claim": c.key, "outcome": "missing", "p": None, "worse": a, "better": b})
            continue
        result, p = outcome([1 - x for x in a], [1 - x for x in b], c.kind)
        out.append({"claim": c.key, "outcome": result, "p": p, "worse": a, "better": b})
    return out


def size_points(doc: dict) -> list[dict]:
    """(parameters, dev loss in nats per token = log dev perplexity) for every seed of every size row."""
    rows = {r["row"]: r for r in doc["rows"]}
    out = []
    for key in SIZE_ROWS:
        row = rows.get(key) or {}
        n = row.get("parameters")
        for v in (row.get("perplexity") or {}).get("values") or []:
            if isinstance(n, int) and isinstance(v, (int, float)) and v > 0:
                out.append({"row": key, "parameters": n, "dev_loss": math.log(v)})
    return out


def power_law(points: list[dict]) -> dict:
    """Least squares of log L = log c - alpha log N over the points: alpha with its standard error, c, R^2, and
    the range of N covered (its ratio and its decades). ValueError with fewer than 3 points or one size."""
    xs = [math.log(p["parameters"]) for p in points]
    ys = [math.log(p["dev_loss"]) for p in points if p["dev_loss"] > 0]
    if len(ys) != len(xs) or len(xs) < 3 or len(set(xs)) < 2:
        raise ValueError("a power law needs at least 3 points, at 2 sizes or more, with positive losses")
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    icept = my - slope * mx
    resid = [y - (icept + slope * x) for x, y in zip(xs, ys)]
    sse = sum(r * r for r in resid)
    syy = sum((y - my) ** 2 for y in ys)
    se = math.sqrt(sse / (n - 2) / sxx) if n > 2 else float("nan")
    lo, hi = min(p["parameters"] for p in points), max(p["parameters"] for p in points)
    return {"alpha": -slope, "alpha_se": se, "c": math.exp(icept), "r2": 1 - sse / syy if syy else 1.0,
            "points": n, "min_parameters": lo, "max_parameters": hi, "ratio": hi / lo,
            "decades": math.log10(hi / lo)}


def fitted_curve(fit: dict, steps: int = 20) -> list[tuple[float, float]]:
    """(N, L) of the fitted law across the points' range, for drawing."""
    lo, hi = math.log(fit["min_parameters"]), math.log(fit["max_parameters"])
    return [(math.exp(lo + (hi - lo) * i / (steps - 1)),
             fit["c"] * math.exp(lo + (hi - lo) * i / (steps - 1)) ** -fit["alpha"]) for i in range(steps)]
