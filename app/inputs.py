"""Parsers for what people type on the concept pages: whole numbers, lists of them, (d_model,
warmup) pairs and sentences. Bad input raises a UserError with an `inputs.errors.*` code; the
page shows it with app.ui.error. Pure Python, no st.* calls."""
from __future__ import annotations

import math
import re

from model.messages import Message, UserError

VALUE = Message("inputs.value")  # the default name of a number in messages


def parse_int(token: str, lo: int, hi: int, name: str | Message = VALUE) -> int:
    """One integer from text ('4000', '4e3', '4_000'), within [lo, hi], or a UserError. `name`
    (a literal such as "d_model", or a Message translated when shown) names it in messages."""
    s = token.strip().replace("_", "")
    shown = token.strip()
    if not s:
        raise UserError("inputs.errors.empty_item", name=name)
    try:
        value = int(s)
    except ValueError:
        try:
            f = float(s)
        except ValueError:
            raise UserError("inputs.errors.not_whole", text=shown) from None
        if not math.isfinite(f) or not f.is_integer():
            raise UserError("inputs.errors.not_whole", text=shown)
        if abs(f) > 1e18:
            raise UserError("inputs.errors.too_large", name=name, text=shown, lo=lo, hi=hi)
        value = int(f)
    if not lo <= value <= hi:
        raise UserError("inputs.errors.out_of_range", name=name, value=value, lo=lo, hi=hi)
    return value


def parse_int_list(text: str, lo: int, hi: int, max_items: int, name: str | Message = VALUE) -> list[int]:
    """'16, 64, 256' -> [16, 64, 256] (commas, semicolons or spaces between numbers)."""
    parts = [p for p in re.split(r"[,;\s]+", text or "") if p]
    if not parts:
        raise UserError("inputs.errors.empty_list")
    if len(parts) > max_items:
        raise UserError("inputs.errors.too_many_numbers", most=max_items, got=len(parts))
    return [parse_int(p, lo, hi, name) for p in parts]


def parse_pairs(text: str, limits: tuple[tuple[int, int], tuple[int, int]], max_items: int,
                names=("d_model", "warmup")) -> list[tuple[int, int]]:
    """'512, 4000; 512 8000 | 256:4000' -> [(512, 4000), (512, 8000), (256, 4000)].
    Pairs are separated by ';', '|' or new lines; the two numbers by ',', ':', '/', 'x' or spaces."""
    chunks = [c.strip() for c in re.split(r"[;\n|]+", text or "") if c.strip()]
    if not chunks:
        raise UserError("inputs.errors.empty_pairs")
    if len(chunks) > max_items:
        raise UserError("inputs.errors.too_many_pairs", most=max_items, got=len(chunks))
    out = []
    for c in chunks:
        nums = [p for p in re.split(r"[,:/x×\s()]+", c.strip("() ")) if p]
        if len(nums) != 2:
            raise UserError("inputs.errors.not_a_pair", text=c, first=names[0], second=names[1])
        out.append((parse_int(nums[0], *limits[0], names[0]), parse_int(nums[1], *limits[1], names[1])))
    return out


def split_words(text: str, max_words: int) -> tuple[list[str], bool]:
    """Whitespace words, at most max_words (returns (words, truncated)). Empty -> UserError."""
    words = (text or "").split()
    if not words:
        raise UserError("inputs.errors.empty_sentence")
    return words[:max_words], len(words) > max_words


def piece_label(piece: str) -> str:
    """SentencePiece marks a leading space with '▁'; drop it for labels (keep a lone '▁')."""
    return piece[1:] if piece.startswith("▁") and len(piece) > 1 else piece
