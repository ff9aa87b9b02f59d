"""Text helpers for the attention inspector (no st.* calls, no computation): token labels, input
cleaning and the rows of its tables, with translated column headers."""
from __future__ import annotations

import math

from app.i18n import t

MAX_CHARS = 2000
STATS = ("entropy", "entropy_norm", "mean_distance", "diagonal", "previous", "first", "last", "max_weight")


def label(piece: str) -> str:
    """A token as shown to the learner: control characters made visible, an empty piece as ∅ (figures
    escape their labels themselves)."""
    shown = piece.replace("\n", "\\n").replace("\t", "\\t")
    return shown or "∅"


def labels(pieces: list[str]) -> list[str]:
    return [label(p) for p in pieces]


def clean_input(text: str, max_chars: int = MAX_CHARS) -> tuple[str, bool]:
    """Strip surrounding whitespace and cut to max_chars; returns (text, was_cut)."""
    text = (text or "").strip()
    return (text[:max_chars], True) if len(text) > max_chars else (text, False)


def token_table(ids: list[int], pieces: list[str], tokenizer, seen: frozenset[int] | None) -> list[dict]:
    """One row per piece: position, piece, id, byte fallback, seen in training (None for special
    tokens, or when the training data is unknown)."""
    specials = (tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id, tokenizer.unk_id)
    col = {k: t(f"inspector.table.{k}") for k in ("piece", "id", "byte", "seen")}
    return [{"#": i, col["piece"]: piece, col["id"]: tid, col["byte"]: bool(tokenizer.is_byte(tid)),
             col["seen"]: (tid in seen) if (seen and tid not in specials) else None}
            for i, (tid, piece) in enumerate(zip(ids, pieces))]


def unseen(ids: list[int], pieces: list[str], tokenizer, seen: frozenset[int]) -> list[str]:
    """Pieces the model never met in training (byte-fallback pieces included)."""
    specials = {tokenizer.pad_id, tokenizer.bos_id, tokenizer.eos_id}
    return [p for i, p in zip(ids, pieces) if i not in specials and i not in seen]


def _rounded(v) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), 3)


def stats_rows(stats: list[dict]) -> list[dict]:
    """Head statistics (model.metrics.summarize_heads) as table rows: 1-based layer/head, rounded."""
    layer, head = t("common.layer"), t("common.head")
    return [{layer: s["layer"] + 1, head: s["head"] + 1, **{t(f"inspector.stat.{k}"): _rounded(s.get(k)) for k in STATS}}
            for s in stats]


def averages_rows(averages: list[dict]) -> list[dict]:
    """model.metrics.layer_averages as table rows: 1-based layers, then the row over everything."""
    layer = t("common.layer")
    return [{layer: t("inspector.all") if a["layer"] is None else str(a["layer"] + 1),
             **{t(f"inspector.stat.{k}"): _rounded(v) for k, v in a.items() if k != "layer"}}
            for a in averages]
