"""The overview's architecture drawing (app/charts/architecture.py): valid SVG, every label in it, escaped,
wrapped inside its box, and nothing overlapping, in both languages."""
import re
import xml.etree.ElementTree as ET

import pytest
from app.i18n import LANGS

from app.charts.architecture import BOX_W, LABELS, architecture_svg, text_px, wrap
from app.i18n import catalogue

NS = {"s": "http://www.w3.org/2000/svg"}


def labels_in(lang: str) -> dict:
    words = catalogue(lang)
    return {k: words[f"overview.graph.{k}"] for k in LABELS}


@pytest.mark.parametrize("lang", list(LANGS))
def test_every_label_is_drawn_inside_its_box(lang):
    g = labels_in(lang)
    root = ET.fromstring(architecture_svg(g, title="t"))
    texts = [t.text for t in root.iterfind(".//s:text", NS)]
    for key, label in g.items():
        lines = wrap(label)
        assert all(line in texts for line in lines), (key, lines)
        assert all(text_px(line) <= BOX_W - 16 or " " not in line for line in lines)
    assert "K, V" in texts
    boxes = [r for r in root.iterfind("s:rect", NS) if r.get("width") == str(BOX_W)]
    assert len(boxes) == 4 + 6 + 5  # encoder: 4 sub-layers; decoder: 6; inputs, embeddings and the output
    # no two boxes overlap
    spans = [(float(r.get("x")), float(r.get("y")), float(r.get("height"))) for r in boxes]
    for i, (x1, y1, h1) in enumerate(spans):
        for x2, y2, h2 in spans[i + 1:]:
            assert x1 != x2 or y1 + h1 <= y2 or y2 + h2 <= y1
    width, height = (float(v) for v in root.get("viewBox").split()[2:])
    assert all(0 <= y and y + h <= height for _, y, h in spans) and all(x + BOX_W <= width for x, _, _ in spans)


def test_labels_are_escaped_and_the_catalogue_breaks_lines():
    g = {k: f"{k} <s> & </s>" for k in LABELS}
    g["cross"] = "first line\\nsecond <b>line</b>"
    svg = architecture_svg(g, title="<script>")
    ET.fromstring(svg)  # still well-formed
    assert "<s>" not in svg and "&lt;s&gt; &amp; &lt;/s&gt;" in svg and "<script>" not in svg
    texts = [t.text for t in ET.fromstring(svg).iterfind(".//s:text", NS)]
    assert "first line" in texts and "second <b>line</b>" in texts  # parsed back: shown as typed


def test_long_words_wrap_by_width_and_korean_counts_as_wide():
    assert wrap("a b") == ["a b"]
    long = " ".join(["word"] * 40)
    lines = wrap(long)
    assert len(lines) > 1 and all(text_px(line) <= BOX_W - 16 for line in lines) and " ".join(lines) == long
    assert text_px("가나다") > 1.5 * text_px("abc")
    assert not re.search(r"\\n", " ".join(wrap("one\\ntwo")))
