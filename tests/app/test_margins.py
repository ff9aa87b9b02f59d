"""Margins fitted to a figure's labels before the browser measures them (app/charts/margins.py).
The browser tests (tests/browser/test_browser_pages.py, assert_laid_out_once) check on every page, in both languages, that
Plotly never has to widen one; these check the estimate itself."""
import numpy as np
import pytest

from app.charts import curves, heatmaps
from app.charts.margins import fit_margins, numeric_ticks
from app.charts.text_width import text_px
from app.charts.style import figure, ready_figure
from tests.app.test_charts import _every_builder


def _margin(fig) -> dict:
    return ready_figure(fig)["layout"]["margin"]


def test_text_width_reads_labels_as_plotly_draws_them():
    assert text_px("가나다") > text_px("abc") > text_px("iii") > 0  # Hangul a full em, narrow letters less
    # an escaped token is measured as the characters it shows; a tag (what plotly makes of a raw `<s>`) as nothing
    assert text_px("&lt;s&gt;") == pytest.approx(text_px("&lt;") + text_px("s") + text_px("&gt;"))
    assert text_px("&lt;s&gt;") > 0
    assert text_px("<s>") == 0 and text_px("<b>ab</b>") == text_px("ab")
    assert text_px("the\u200b (2)") == text_px("the (2)")  # labels() makes repeated tokens distinct this way
    assert text_px("a<br>longer line") == text_px("longer line")  # the widest line
    assert text_px("abc", 14) > text_px("abc", 12)


def test_numeric_ticks_are_written_as_plotly_writes_them():
    ticks = numeric_ticks(0, 0.001)
    assert {"0", "0.0002", "0.001"} <= set(ticks) and "0.0010" not in ticks
    assert "−0.5" in numeric_ticks(-1, 1) and "−1" in numeric_ticks(-1, 1)
    assert "20k" in numeric_ticks(0, 20000)
    assert numeric_ticks(0, 1, ".0%")[1] == "100%"
    assert numeric_ticks(float("nan"), 1) == [] and numeric_ticks(3, 3) == ["3"]


@pytest.mark.parametrize("name, fig", list(_every_builder()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_builders_figure_gets_margins_that_never_shrink(name, fig):
    """Unguarded (ready_figure falls back to the figure's own margins if the estimate fails): every builder's
    figure can be read, and a side only ever grows."""
    d = fig.to_dict()
    margin = fit_margins(d["data"], d["layout"])
    given = d["layout"].get("margin") or {}
    if margin is not None:
        for side in "lrtb":
            if given.get(side) is not None:
                assert margin[side] >= given[side], (name, side)


def test_longer_labels_get_more_room():
    short = heatmaps.attention_heatmap(np.full((2, 2), 0.5), ["a", "b"], ["a", "b"], title="t")
    long = heatmaps.attention_heatmap(np.full((2, 2), 0.5), ["a", "▁아이들은"], ["a", "b"], title="t")
    assert _margin(long)["l"] > _margin(short)["l"] >= 40  # tick labels and the query title beside them
    bare = heatmaps.attention_heatmap(np.full((2, 2), 0.5), ["a", "b"], ["a", "b"], title="t", show_text=False)
    assert _margin(bare)["r"] >= 70 > _margin(short)["r"]  # the colour bar with its tick labels; none beside numbers


def test_a_legend_under_the_plot_and_axis_titles_get_room_below():
    plain = curves.line_chart([1, 2, 3], {"a": [1.0, 2.0, 3.0]}, title="one line")
    legend = curves.line_chart([1, 2, 3], {"a": [1.0, 2.0, 3.0], "b": [3, 2, 1]}, title="two", x_title="step")
    assert _margin(legend)["b"] > _margin(plain)["b"]


def test_a_legend_under_the_plot_starts_below_the_axis_title():
    """A short plot (the recipe page's loss curves, 300 px high): the legend's top, -y plot heights below the
    plot, comes after the x axis's tick labels and title, which the bottom margin holds above it."""
    from app.charts.margins import fit_layout
    for height in (300, 600):
        d = curves.line_chart([0.1, 0.5, 0.9], {"no smoothing": [2.3, 0.7, 0.1], "smoothing": [2.4, 0.8, 0.5]},
                              title="loss", x_title="model's probability on the correct token", height=height)
        fitted = fit_layout(d["data"], d["layout"])
        margin = fitted.get("margin") or d["layout"]["margin"]
        plot_h = height - margin["t"] - margin["b"]
        axis_room = 12 * 1.35 + 14 + 14 * 1.35 + 16  # a line of ticks, the title and the gaps Plotly leaves
        assert -fitted["legend"]["y"] * plot_h >= axis_room, (height, fitted)
        assert margin["b"] >= -fitted["legend"]["y"] * plot_h + 2 * 12 * 1.6  # the legend below it fits too


def test_a_figure_that_asks_for_fixed_margins_keeps_them():
    fig = figure([dict(type="bar", x=["a", "b"], y=[1, 2])], dict(margin=dict(l=5, r=5, t=5, b=5, autoexpand=False)))
    d = fig
    assert fit_margins(d["data"], d["layout"]) is None
    assert _margin(fig)["l"] == 5


def test_an_unreadable_figure_still_draws_with_its_own_margins(monkeypatch):
    """The estimate only saves the browser a second layout pass: where it fails, the figure keeps its own margins
    (and Plotly's automatic ones) and no exception reaches the page."""
    from app.charts import margins

    def unreadable(data, layout):
        raise ValueError("a figure the estimate cannot read")
    monkeypatch.setattr(margins, "fit_layout", unreadable)
    fig = figure([dict(type="heatmap", z=[[1, 2], [3, 4]])], dict(margin=dict(l=10, r=10, t=10, b=10)))
    assert _margin(fig) == dict(l=10, r=10, t=10, b=10)


def test_one_text_width_estimate():
    """The margins, the peak labels (app.charts.curves) and the architecture drawing's wrapping all measure text
    with app.charts.text_width.text_px."""
    from app.charts import architecture
    assert curves.text_px is text_px
    assert architecture.text_px("가나다 abc") == text_px("가나다 abc", architecture.FONT_PX)
