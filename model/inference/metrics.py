"""Evaluation: BLEU (sacrebleu), exact match, and simple per-head attention statistics."""
from __future__ import annotations

import math
import unicodedata
from typing import Sequence

import torch

KOREAN_TOKENIZE = "char"


def bleu(hypotheses: Sequence[str], references: Sequence[str] | Sequence[Sequence[str]],
         korean: bool = True, tokenize: str | None = None) -> float:
    """Corpus BLEU (0..100) with sacrebleu's corpus_bleu. references: one string per hypothesis,
    or a list of alternatives per hypothesis.

    Tokenisation. sacrebleu's standard for Korean is "ko-mecab" (morphemes), but it needs the
    MeCab-ko library and dictionary, which are not installed here; "flores101"/"flores200"/"spm"
    download a SentencePiece model on first use, and this app must work offline. Word-level
    "13a" on space-separated eojeol is too harsh for an agglutinative language: 커피를 vs 커피가
    counts as a complete miss. So Korean uses "char" (every character is a token; a Hangul
    syllable block is one character, spaces are dropped), after NFC normalisation so decomposed
    jamo compare equal to composed syllables. Character BLEU runs higher than morpheme BLEU, so
    compare it only with itself, not with published WMT numbers. Other languages use "13a",
    sacrebleu's default (the WMT convention). `tokenize` overrides either choice."""
    import sacrebleu

    hyps = [unicodedata.normalize("NFC", h) for h in hypotheses]
    if len(hyps) != len(references):
        raise ValueError(f"{len(hyps)} hypotheses but {len(references)} references")
    if not hyps:
        return 0.0
    alts = [[r] if isinstance(r, str) else list(r) for r in references]
    n_streams = max(len(a) for a in alts)
    streams = [[unicodedata.normalize("NFC", a[i]) if i < len(a) else None for a in alts]
               for i in range(n_streams)]  # sacrebleu: one stream per alternative; None = missing
    tok = tokenize or (KOREAN_TOKENIZE if korean else "13a")
    return float(sacrebleu.corpus_bleu(hyps, streams, tokenize=tok).score)


def exact_match(hyps: Sequence[str], refs: Sequence[str]) -> float:
    """Fraction (0..1) of hypotheses equal to their reference after stripping and NFC."""
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if not hyps:
        return 0.0
    norm = lambda s: " ".join(unicodedata.normalize("NFC", s).split())
    return sum(norm(h) == norm(r) for h, r in zip(hyps, refs)) / len(hyps)


# -----------------------------------------------------------------------------
# attention head statistics

def _mean(x: torch.Tensor, rows: torch.Tensor) -> float:
    """Mean of x over the selected rows; NaN when no row qualifies."""
    return float(x[rows].mean()) if bool(rows.any()) else math.nan


def head_statistics(weights, causal: bool = False) -> list[dict]:
    """weights: (H, Lq, Lk) attention of one layer and one example (tensor or array).
    Returns one dict per head, each a mean over query rows q:
        entropy        -sum_k w log w, in nats (0 = one key, log(Lk) = uniform)
        entropy_norm   entropy / log(number of keys row q may see), in 0..1
        mean_distance  sum_k w_k |q - k|, in positions
        diagonal       weight on k == q          (rows with q < Lk)
        previous       weight on k == q - 1      (rows with 1 <= q <= Lk)
        first          weight on k == 0
        last           weight on k == Lk - 1     (e.g. the source's EOS in cross-attention)
        max_weight     the row's largest weight
    Rows that are all zero (fully masked queries) are left out. With causal=True (decoder
    self-attention) row 0 is left out too, since it can only attend to itself, and row q counts
    q + 1 visible keys for entropy_norm. For cross-attention (Lq != Lk) positions are plain indices."""
    w = torch.as_tensor(weights).detach().cpu().to(torch.float64)  # to the CPU first: MPS has no float64
    if w.dim() != 3:
        raise ValueError(f"expected (H, Lq, Lk), got shape {tuple(w.shape)}")
    H, Lq, Lk = w.shape
    q = torch.arange(Lq, dtype=torch.float64)[:, None]  # (Lq, 1)
    k = torch.arange(Lk, dtype=torch.float64)[None, :]  # (1, Lk)
    visible = (q[:, 0] + 1).clamp(max=Lk) if causal else torch.full((Lq,), float(Lk), dtype=torch.float64)  # (Lq,)
    rows = torch.arange(Lq)
    out = []
    for h in range(H):
        wh = w[h]  # (Lq, Lk)
        live = wh.sum(-1) > 1e-9  # (Lq,)
        if causal and Lq > 1:
            live &= rows >= 1
        ent = -(wh * wh.clamp_min(1e-30).log()).sum(-1)  # (Lq,)
        ent_norm = torch.where(visible > 1, ent / visible.clamp_min(2).log(), torch.zeros_like(ent))  # (Lq,)
        dist = (wh * (q - k).abs()).sum(-1)  # (Lq,)
        diag = torch.zeros(Lq, dtype=torch.float64)
        prev = torch.zeros(Lq, dtype=torch.float64)
        n = min(Lq, Lk)
        diag[:n] = wh[rows[:n], rows[:n]]
        m = min(Lq, Lk + 1)
        prev[1:m] = wh[rows[1:m], rows[1:m] - 1]
        out.append({
            "head": h,
            "entropy": _mean(ent, live),
            "entropy_norm": _mean(ent_norm, live),
            "mean_distance": _mean(dist, live),
            "diagonal": _mean(diag, live & (rows < Lk)),
            "previous": _mean(prev, live & (rows >= 1) & (rows <= Lk)),
            "first": _mean(wh[:, 0], live),
            "last": _mean(wh[:, -1], live),
            "max_weight": _mean(wh.max(-1).values, live),
        })
    return out


def summarize_heads(intermediates, kind: str) -> list[dict]:
    """head_statistics for every layer of one kind ("encoder_self", "decoder_self", "cross"),
    batch item 0; each dict gains "layer" and "kind"."""
    layers = getattr(intermediates, kind)
    rows = []
    for layer, w in enumerate(layers):  # w: (B, H, Lq, Lk)
        for stats in head_statistics(w[0], causal=(kind == "decoder_self")):
            rows.append({"layer": layer, "kind": kind, **stats})
    return rows


AVERAGED = ("entropy", "mean_distance", "diagonal", "previous", "first", "max_weight")


def layer_averages(stats: list[dict], keys: Sequence[str] = AVERAGED) -> list[dict]:
    """The mean of each statistic per layer (NaNs ignored), then over all layers and heads.
    One dict per layer, {"layer": 0-based index, key: mean, ...}; the overall row has layer None."""
    import numpy as np

    groups: dict = {}
    for s in stats:
        groups.setdefault(s["layer"], []).append(s)
    def mean(items, k):  # all-NaN (e.g. "previous" on a one-token sentence) is NaN, without numpy's warning
        values = np.asarray([i[k] for i in items], dtype=float)
        return float(np.nanmean(values)) if np.isfinite(values).any() else float("nan")
    rows = [{"layer": layer, **{k: mean(items, k) for k in keys}} for layer, items in sorted(groups.items())]
    if stats:
        rows.append({"layer": None, **{k: mean(stats, k) for k in keys}})
    return rows


def rounded(v, digits: int = 3) -> float | None:
    """A statistic as a table shows it: rounded to `digits`, None where it is undefined (missing or NaN)."""
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), digits)
