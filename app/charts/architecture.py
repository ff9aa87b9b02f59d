"""The Transformer's architecture (the paper's Figure 1) as an SVG drawing in the page's language.

Drawn here rather than by st.graphviz_chart: the browser lays a Graphviz graph out again (in WebAssembly) on
every rerun whose labels changed, which made the overview's language switch visibly slower in Chromium
(docs/benchmarks.md). The SVG is plain markup: the layout below is fixed, only the labels change."""
from __future__ import annotations

from dataclasses import dataclass
from html import escape

from app.charts import text_width

FONT_PX = 12
LINE_PX = 15
BOX_W = 230          # every box is this wide; labels wrap inside it
GAP = 24             # between two boxes of a column (the arrow)
PAD = 12             # a cluster's border around its boxes
CLUSTER_LABEL = 20   # room for a cluster's name above its boxes
MARGIN = 10
COLUMNS_X = (MARGIN + PAD + BOX_W / 2, MARGIN + 3 * PAD + 1.5 * BOX_W + 40)  # encoder, decoder centres
WIDTH = int(COLUMNS_X[1] + BOX_W / 2 + PAD + MARGIN)

GREY, YELLOW, WHITE = "#eeeeee", "#fff3cd", "#ffffff"
ENCODER, DECODER, CROSS = "#1f77b4", "#d62728", "#7f3fbf"

# (label key, fill) from the bottom up; None opens and closes a cluster (its label key, colour)
ENCODER_STACK = [("source", GREY), ("embedding", YELLOW), ("encoder", ENCODER),
                 ("encoder_self", "#cfe2f3"), ("add_norm", WHITE), ("ffn", "#d9ead3"), ("add_norm", WHITE), None]
DECODER_STACK = [("target", GREY), ("embedding", YELLOW), ("decoder", DECODER),
                 ("decoder_self", "#f4cccc"), ("add_norm", WHITE), ("cross", "#d9d2e9"), ("add_norm", WHITE),
                 ("ffn", "#d9ead3"), ("add_norm", WHITE), None, ("output", GREY)]
CLUSTERS = {"encoder": ENCODER, "decoder": DECODER}
LABELS = ("encoder", "decoder", "encoder_self", "decoder_self", "cross", "ffn", "add_norm", "source", "target",
          "embedding", "output")


def text_px(text: str) -> float:
    """Estimated width of a line at FONT_PX (app.charts.text_width, the app's one estimate of text widths)."""
    return text_width.text_px(text, FONT_PX)


def wrap(label: str, width: float = BOX_W - 16) -> list[str]:
    """The label's lines: its own breaks (a literal \\n, as in the catalogue), then words wrapped to fit."""
    lines = []
    for part in label.replace("\\n", "\n").split("\n"):
        line = ""
        for word in part.split():
            candidate = f"{line} {word}" if line else word
            if line and text_px(candidate) > width:
                lines.append(line)
                line = word
            else:
                line = candidate
        lines.append(line)
    return lines


@dataclass
class Box:
    key: str
    fill: str
    lines: list[str]
    x: float        # centre
    y: float = 0.0  # top
    h: float = 0.0


def _column(stack, x: float, g: dict) -> tuple[list[Box], list[tuple]]:
    """Boxes and cluster frames of one column, stacked bottom-up from y = 0 (negative is up)."""
    boxes, frames, y, open_cluster = [], [], 0.0, None
    for item in stack:
        if item is None:  # close the cluster: its label sits above its top box
            key, colour, bottom = open_cluster
            top = y - PAD - CLUSTER_LABEL
            frames.append((key, colour, top, bottom))
            y = top
            open_cluster = None
            continue
        key, fill = item
        if key in CLUSTERS:
            open_cluster = (key, CLUSTERS[key], y - GAP)
            y -= PAD
            continue
        lines = wrap(g[key])
        h = 10 + LINE_PX * len(lines)
        box = Box(key, fill, lines, x, y - GAP - h if boxes else y - h, h)
        boxes.append(box)
        y = box.y
    return boxes, frames


def architecture_svg(g: dict[str, str], title: str = "") -> str:
    """The encoder (left) and decoder (right) with their sub-layers, bottom-up as in the paper. `g`: the label
    of each key in LABELS, in the page's language (escaped here)."""
    enc, enc_frames = _column(ENCODER_STACK, COLUMNS_X[0], g)
    dec, dec_frames = _column(DECODER_STACK, COLUMNS_X[1], g)
    top = min([b.y for b in enc + dec] + [f[2] for f in enc_frames + dec_frames])
    shift = MARGIN - top
    height = int(shift + MARGIN)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" '
           f'height="{height}" role="img" font-family="sans-serif" font-size="{FONT_PX}">',
           f"<title>{escape(title)}</title>" if title else "",
           '<defs><marker id="atlas-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555555"/></marker>'
           f'<marker id="atlas-arrow-kv" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
           f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{CROSS}"/></marker></defs>']
    for key, colour, ftop, fbottom in enc_frames + dec_frames:
        x = COLUMNS_X[0] if key == "encoder" else COLUMNS_X[1]
        out.append(f'<rect x="{x - BOX_W / 2 - PAD}" y="{ftop + shift}" width="{BOX_W + 2 * PAD}" '
                   f'height="{fbottom - ftop}" rx="10" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out.append(f'<text x="{x - BOX_W / 2 - PAD + 10}" y="{ftop + shift + 15}" fill="{colour}" '
                   f'font-weight="bold">{escape(g[key])}</text>')  # at the left: the arrows run up the middle
    for column in (enc, dec):
        for lower, upper in zip(column, column[1:]):
            out.append(f'<line x1="{lower.x}" y1="{lower.y + shift}" x2="{upper.x}" y2="{upper.y + upper.h + shift}" '
                       f'stroke="#555555" stroke-width="1.2" marker-end="url(#atlas-arrow)"/>')
        for b in column:
            out.append(f'<rect x="{b.x - BOX_W / 2}" y="{b.y + shift}" width="{BOX_W}" height="{b.h}" rx="6" '
                       f'fill="{b.fill}" stroke="#555555" stroke-width="1"/>')
            for i, line in enumerate(b.lines):
                out.append(f'<text x="{b.x}" y="{b.y + shift + 5 + LINE_PX * (i + 0.8)}" text-anchor="middle" '
                           f'fill="#222222">{escape(line)}</text>')
    # the encoder's output feeds every decoder layer's encoder-decoder attention as its keys and values
    src = [b for b in enc if b.key == "add_norm"][-1]
    dst = next(b for b in dec if b.key == "cross")
    x1, y1 = src.x + BOX_W / 2, src.y + src.h / 2 + shift
    x2, y2 = dst.x - BOX_W / 2, dst.y + dst.h / 2 + shift
    mid = (x1 + x2) / 2
    out.append(f'<path d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" fill="none" stroke="{CROSS}" '
               f'stroke-width="1.8" marker-end="url(#atlas-arrow-kv)"/>')
    out.append(f'<text x="{mid + 4}" y="{(y1 + y2) / 2 - 4}" fill="{CROSS}" font-weight="bold">K, V</text>')
    out.append("</svg>")
    return "".join(out)
