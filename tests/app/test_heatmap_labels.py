"""Dense heatmaps keep every label readable (app/charts/heatmaps.py): with 24 tokens every builder that labels a
map's axes with tokens draws all of them (an array of ticks), at 10 px or more, long ones shortened with the
whole token kept for the hover, the key labels upright when side by side they would touch, each row ROW_PX
high and the plot at least COL_PX a column wide (the chart element widens it and lets it scroll); many heads
are small multiples titled by their number. The browser test (tests/browser/test_browser_charts.py) measures
the drawn labels."""
from __future__ import annotations

import html

import numpy as np
import plotly.graph_objects as go
import pytest

from app.charts import heatmaps
from app.charts.heatmaps import COL_PX, ROW_PX, SHORT, TICK_MIN_PX, head_multiples, short_label

TOKENS = ["▁the", "▁extraordinarily", "<pad>", "▁the", "a&b", "[MASK]"] + [f"▁w{i}" for i in range(18)]  # 24


def builders():
    w = np.random.default_rng(0).random((24, 24))
    yield "attention_heatmap", heatmaps.attention_heatmap(w, TOKENS, TOKENS, title="t")
    yield "matrix_heatmap", heatmaps.matrix_heatmap(w - 0.5, TOKENS, TOKENS, title="t")
    yield "stage_figure", heatmaps.stage_figure("weights", w, TOKENS, TOKENS, title="t")
    yield "stage_figure scores", heatmaps.stage_figure("scaled", w - 0.5, TOKENS, TOKENS, title="t")


@pytest.mark.parametrize("name,fig", list(builders()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_token_label_is_drawn_readable(name, fig):
    go.Figure(fig)  # plotly's checks
    layout, trace = fig["layout"], fig["data"][0]
    for axis, full in (("xaxis", trace["x"]), ("yaxis", trace["y"])):
        a = layout[axis]
        assert a["tickmode"] == "array" and list(a["tickvals"]) == list(full), (name, axis)  # Plotly skips none
        assert len(a["ticktext"]) == 24 and a["tickfont"]["size"] >= TICK_MIN_PX, (name, axis)
        for text in a["ticktext"]:
            assert len(html.unescape(text.split("\u200b")[0])) <= SHORT, (name, text)
    assert "▁extraordinarily" in html.unescape(" ".join(trace["x"]))  # the hover names the whole token
    assert layout["xaxis"]["tickangle"] == -90
    assert layout["height"] >= ROW_PX * 24 and layout["minreducedwidth"] >= COL_PX * 24, name


def test_short_labels_keep_the_occurrence_number_and_escape_once():
    assert short_label("▁extraordinarily") == "▁extrao…"
    assert short_label("a&lt;b&gt;cdefghij") == "a&lt;b&gt;cde…"
    assert short_label("▁extraordinarily\u200b (2)") == "▁extrao…\u200b (2)"
    assert short_label("▁the") == "▁the"


def test_many_heads_are_small_multiples_titled_by_number():
    fig = head_multiples(np.random.default_rng(1).random((64, 24, 24)), TOKENS, TOKENS, head_title="head")
    go.Figure(fig)
    layout = fig["layout"]
    titles = [a["text"] for a in layout["annotations"]]
    assert titles == [f"head {h + 1}" for h in range(64)]
    assert all(a["font"]["size"] >= TICK_MIN_PX for a in layout["annotations"])
    assert layout["xaxis"]["showticklabels"] is False and layout["yaxis"]["showticklabels"] is False
    hover = fig["data"][0]["hovertext"]
    assert any("▁extraordinarily" in html.unescape(str(h)) for row in hover for h in row)
