"""The attention view: a sentence's whole attention sent to the browser once, and every choice that only changes
the drawing answered there (app/static/attention_view.js is its browser half).

A layer, a head, a tile of the grid, a token hovered or a query picked changes nothing the server computes, yet as
Streamlit widgets each was a round trip: the script reran, the figure was rebuilt and sent again. This element
gets every layer x head x query x key map of every kind of attention (encoder self-, decoder self-, cross-) once,
and draws the grid of small multiples, the enlarged map of the tile clicked and the head view (BertViz's lines
from each query to each key) in the page, from the same numbers.

The payload is binary: a little-endian uint32 length, a JSON header (tokens, sizes, the words the view shows in
the page's language, the colour scale, the first view), padding to an even offset, then every weight as a uint16
count of 1/65535 — within half a count (7.6e-6) of the float, finer than any colour or the three decimals the
view prints, at half a float32's bytes (bench/attention_view_payload.py measures it; docs/benchmarks.md has the
numbers).

The view's choices go into the page's link (`?view=kind.layer.head.query`, 1-based, 0 for the mean or for every
query) from the browser, with history.replaceState: no server run. The browser reads it back when a link opens the
page, and this tab's sessionStorage keeps it across page switches; it stays in the link across the page's own runs
through the link keeper of app/static/atlas_choice.js (Streamlit writes the query string it last had from the server). Tokens reach the page as text (canvas fillText and
textContent), never as HTML."""
from __future__ import annotations

import functools
import json
import os
import struct

import numpy as np
import streamlit as st

from app.fast.chart import module_stub, uses_element, versioned

MODULE = "attention_view.js"
COMPONENT = "atlas_attention_view"
PARAM = "view"
SCALE = 65535  # a weight w is sent as round(w * SCALE)


def quantise(weights) -> np.ndarray:
    """(..., Lq, Lk) weights in [0, 1] as uint16 counts of 1/SCALE (NaN, as a fully masked row can give, is 0)."""
    w = np.nan_to_num(np.asarray(weights, dtype=np.float64), nan=0.0)
    return np.rint(np.clip(w, 0.0, 1.0) * SCALE).astype("<u2")


WORDS = ("layer", "head", "mean", "all_heads", "all_queries", "query", "kind", "step", "grid_hint", "grid_hint_heads",
         "hover_hint", "lines_hint", "download", "masked", "masked_hint")  # the view's words: common.view.* of the catalogue


def words() -> dict[str, str]:
    """The view's words in the page's language."""
    from app.i18n import t
    return {w: t(f"common.view.{w}") for w in WORDS}


def page_resets() -> int:
    """How many times "reset this page" ran on the page being drawn, in this session (app.state.reset_page): part
    of what a page asks its browser views for, so that after a reset the page's first view wins over the learner's
    last one."""
    from app.state import PAGE, RESETS
    ss = st.session_state
    return ss.get(RESETS, {}).get(ss.get(PAGE, ""), 0)


def view_bytes(kinds: list[dict], mode: str, initial: dict | None = None, param: str = PARAM) -> bytes:
    """payload() with the view's words in the page's language and the app's colours (attention on 0…1 in the
    maps' scale; one colour per head as the app's charts give them)."""
    from app.charts.style import ATTN_SCALE, PALETTE, named_scale
    return payload(kinds, words(), named_scale(ATTN_SCALE), PALETTE, mode, initial, resets=page_resets(), param=param)


def payload(kinds: list[dict], words: dict[str, str], colours: list, head_colours: list[str], mode: str,
            initial: dict | None = None, resets: int = 0, param: str = PARAM) -> bytes:
    """The bytes the browser gets. kinds: [{"id", "label", "weights" (layers, H, Lq, Lk), "q", "k" (token texts),
    "q_title", "k_title", "groups" (one label per key/value head's query heads, or None), "decoder" (whether a
    query is a decoding step), "causal" (whether a causal mask hides every later key: the view marks those cells;
    a weight of exactly 0 alone says nothing, since a peaked softmax underflows to 0 in float32), "top" (the weight
    drawn in the scale's darkest colour, default 1: below 1 for maps whose every weight is small, which the page
    then says, app.charts.heatmaps.scale_top)}].
    mode: "grid" (tiles and the enlarged map) or "heads" (the head view). initial: the first view the page asks for,
    {"kind", "layer", "head", "query"} (1-based, 0 for a mean or for every query; default the first kind, layer 1,
    head 1): the page's own inputs, which a link or a tour stop may have set. The browser prefers the link's view,
    then the learner's last one on the page while the page asks for the same first view (`asked`: the first view
    and how many times the page was reset). param: the view's name in the link and the tab's memory (one per view
    of a page)."""
    header_kinds, blobs, offset = [], [], 0
    for kind in kinds:
        q = quantise(kind["weights"])
        layers, heads, n_q, n_k = q.shape
        header_kinds.append({"id": kind["id"], "label": kind["label"], "layers": layers, "heads": heads,
                             "nq": n_q, "nk": n_k, "q": [str(x) for x in kind["q"]], "k": [str(x) for x in kind["k"]],
                             "qTitle": kind["q_title"], "kTitle": kind["k_title"], "groups": kind.get("groups"),
                             "decoder": bool(kind.get("decoder")), "causal": bool(kind.get("causal")),
                             "top": float(kind.get("top", 1.0)), "offset": offset})
        blobs.append(q.tobytes())
        offset += q.size
    first = {"kind": kinds[0]["id"], "layer": 1, "head": 1, "query": 0, **(initial or {})}
    header = {"kinds": header_kinds, "words": words, "colours": [list(stop) for stop in colours],
              "headColours": list(head_colours), "initial": first, "mode": mode, "param": param, "scale": SCALE,
              "asked": "{kind}.{layer}.{head}.{query}".format(**first) + f"|{resets}",
              "linkModule": versioned("atlas_choice.js")}  # its link keeper (app/fast/choice.py)
    head = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    pad = b" " * ((4 + len(head)) % 2)  # the weights start at an even offset (a Uint16Array's alignment)
    return struct.pack("<I", len(head) + len(pad)) + head + pad + b"".join(blobs)


def read_payload(data: bytes) -> tuple[dict, np.ndarray]:
    """payload() read back (tests, benches): the header, and every weight as float64 in the order sent."""
    (n,) = struct.unpack_from("<I", data)
    header = json.loads(data[4:4 + n].decode())
    return header, np.frombuffer(data[4 + n:], dtype="<u2").astype(np.float64) / SCALE


@functools.lru_cache(maxsize=1)
def _component():
    return st.components.v2.component(COMPONENT, js=module_stub(MODULE, "__atlasAttentionView"), isolate_styles=False)


def available() -> bool:
    """Whether the browser can draw the view: the chart element's files are served (app.fast.chart.uses_element)
    and ATLAS_ATTENTION_VIEW is not "server" (the switch back to the server-drawn grid and head view)."""
    return uses_element() and os.environ.get("ATLAS_ATTENTION_VIEW") != "server"


def attention_view(data: bytes, *, key: str) -> None:
    """Draw the view (payload() bytes). The same key from one run to the next keeps the browser's view."""
    _component()(key=f"atlas-attention-{key}", data=data, height="content")

