"""The app's one estimate of how wide a text is drawn, from its characters (no browser to measure it in): the
margins that hold a chart's labels (app.charts.margins), the peak labels kept apart (app.charts.curves) and the
architecture drawing's wrapped labels (app.charts.architecture) all read it. Widths in ems of Streamlit's
sans-serif; Hangul and other wide East Asian characters a full em."""
from __future__ import annotations

import html
import re
import unicodedata

TICK_PX = 12  # Streamlit's chart theme writes tick labels at 0.75rem
_NARROW = set("fijlrtI.,:;'!|()[]{}\"` ")
_WIDE = set("mwMW@%")
_TAG = re.compile(r"<[^>]+>")
_BREAK = re.compile(r"<br\s*/?>", re.I)


def char_em(ch: str) -> float:
    """A character's width in ems, roughly."""
    if ch in ("\u200b", "\u200c", "\u200d"):
        return 0.0
    if ch in _NARROW:
        return 0.3
    if ch in _WIDE:
        return 0.8
    if ch.isdigit() or ch in "−-+=<>~#$&*?/\\_^":
        return 0.52
    if "A" <= ch <= "Z":
        return 0.63
    if ch.isascii():
        return 0.52
    if unicodedata.east_asian_width(ch) in ("W", "F"):
        return 1.0
    return 0.75


def text_px(text, size: float = TICK_PX) -> float:
    """Estimated width in px of a text at font size `size`, read as Plotly reads a label: HTML entities read,
    tags dropped, its widest line (lines broken by <br>)."""
    lines = _BREAK.split(str(text))
    return max((sum(char_em(c) for c in html.unescape(_TAG.sub("", line))) for line in lines), default=0.0) * size
