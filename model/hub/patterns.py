"""Classic head patterns (Clark et al., 2019, "What Does BERT Look At?"; Kovaleva et al., 2019), read from one
sentence's self-attention maps: for each head, how much of each query's attention goes on average to

- "cls": the first token ([CLS], <s>), where a head with nothing to do parks its attention;
- "sep": the separator tokens ([SEP], </s>), the other resting place;
- "previous" / "next": the token just before / after the query;
- "same": the query token itself (the diagonal);

and "broad": how spread out the rows are (the mean entropy of a row over the keys it may see, divided by its
maximum, the entropy of a uniform row; 1 = uniform). A head is named by the pattern that takes the most
attention when that is at least THRESHOLD, "broad" when it is none of these and its rows are at least BROAD
spread, else "mixed". Pure numpy: no torch, no model."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PATTERNS = ("cls", "sep", "previous", "next", "same", "broad")
POSITIONAL = ("cls", "sep", "previous", "next", "same")
THRESHOLD = 0.5  # the mean share of attention a pattern takes for a head to be named by it
BROAD = 0.8  # the normalised entropy from which a head without a positional pattern is "broad"


@dataclass(frozen=True)
class HeadPattern:
    layer: int  # 0-based
    head: int  # 0-based
    pattern: str  # one of PATTERNS, or "mixed"
    score: float  # the named pattern's score (the mean share, or the normalised entropy for "broad")
    scores: dict  # every pattern's score; NaN where it has no meaning (no [SEP], a one-token sentence)


def scores(w: np.ndarray, first: list[int], separators: list[int]) -> dict[str, float]:
    """Every pattern's score for one head's (L, L) map (rows are queries and sum to 1). `first`, `separators`:
    the key positions of the first and separator tokens (empty when the model has none)."""
    w = np.asarray(w, dtype=np.float64)
    n = w.shape[0]
    causal = n > 1 and not np.triu(w, 1).any()  # a decoder's masked map: row i sees keys 0..i
    out = {"cls": float(w[:, first].sum(1).mean()) if first else float("nan"),
           "sep": float(w[:, separators].sum(1).mean()) if separators else float("nan"),
           "previous": float(np.diagonal(w, -1).mean()) if n > 1 else float("nan"),
           "next": float(np.diagonal(w, 1).mean()) if n > 1 and not causal else float("nan"),
           "same": float(np.diagonal(w).mean())}
    seen = np.arange(1, n + 1) if causal else np.full(n, n)  # how many keys each row may see
    rows = seen > 1
    if rows.any():
        p = np.clip(w[rows], 1e-12, 1.0)
        entropy = -(w[rows] * np.log(p)).sum(1)
        out["broad"] = float((entropy / np.log(seen[rows])).mean())
    else:
        out["broad"] = float("nan")
    return out


def name(s: dict[str, float]) -> tuple[str, float]:
    """The pattern a head's scores name, and its score."""
    known = [(s[k], k) for k in POSITIONAL if np.isfinite(s[k])]
    if known:
        best, pattern = max(known)
        if best >= THRESHOLD:
            return pattern, best
    if np.isfinite(s["broad"]) and s["broad"] >= BROAD:
        return "broad", s["broad"]
    return "mixed", max((v for v, _ in known), default=float("nan"))


def head_patterns(weights, first: list[int] = (), separators: list[int] = ()) -> list[HeadPattern]:
    """One HeadPattern per head of `weights` (layers, H, L, L), layer by layer."""
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 4 or weights.shape[2] != weights.shape[3]:
        raise ValueError(f"self-attention maps (layers, heads, L, L) expected, got shape {weights.shape}")
    first, separators = sorted(set(first)), sorted(set(separators) - set(first))
    out = []
    for layer in range(weights.shape[0]):
        for head in range(weights.shape[1]):
            s = scores(weights[layer, head], first, separators)
            pattern, score = name(s)
            out.append(HeadPattern(layer, head, pattern, score, s))
    return out


def by_pattern(found: list[HeadPattern]) -> dict[str, list[HeadPattern]]:
    """The heads of each pattern (PATTERNS order, then "mixed"), strongest first; patterns no head has are left out."""
    groups: dict[str, list[HeadPattern]] = {}
    for p in (*PATTERNS, "mixed"):
        heads = sorted((h for h in found if h.pattern == p), key=lambda h: (-np.nan_to_num(h.score), h.layer, h.head))
        if heads:
            groups[p] = heads
    return groups
