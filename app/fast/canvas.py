"""A grid of grey pixels the learner paints with the mouse, a pen or a finger (the ViT section's digit canvas).

A public st.components.v2 component in the page (no iframe): app/fast/digit_canvas.js paints in the browser while
the pointer moves (a stroke that starts on an empty pixel inks what it crosses, one that starts on ink erases) and
sends the whole grid once, when the pointer is released, as the trigger value "drawn". A chart with on_select
instead needed one server run per pixel, and a drag panned the chart."""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Callable

import streamlit as st

SCRIPT = Path(__file__).with_name("digit_canvas.js")
COMPONENT = "atlas_digit_canvas"


@functools.lru_cache(maxsize=1)
def _component():
    return st.components.v2.component(COMPONENT, js=SCRIPT.read_text(encoding="utf-8"), isolate_styles=False)


def drawn_pixels(value, size: int, top: int) -> list[list[int]] | None:
    """The browser's grid (a flat list of size² numbers) as rows of whole numbers 0..top, or None when it is not
    such a list (nothing is trusted that came over the socket)."""
    if not isinstance(value, (list, tuple)) or len(value) != size * size:
        return None
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v:
            return None
        out.append(int(min(max(round(v), 0), top)))
    return [out[r * size:(r + 1) * size] for r in range(size)]


def pixel_canvas(pixels, *, key: str, title: str, on_drawn: Callable[[list[list[int]]], None], top: int = 16,
                 px: int = 320) -> None:
    """Draw `pixels` (rows of numbers 0..top, 0 white, top black) as a square canvas of `px` CSS pixels. After each
    stroke on_drawn(rows) runs in a callback, before the page's rerun, with the painted grid."""
    rows = [[int(v) for v in row] for row in pixels]
    size = len(rows)

    def changed() -> None:
        state = st.session_state.get(key)
        value = getattr(state, "drawn", None) if state is not None else None
        if value is None and isinstance(state, dict):
            value = state.get("drawn")
        grid = drawn_pixels(value, size, top)
        if grid is not None:
            on_drawn(grid)

    _component()(key=key, data={"pixels": [v for row in rows for v in row], "size": size, "max": top, "px": px,
                                "title": title}, on_drawn_change=changed, height="content", width="content")
